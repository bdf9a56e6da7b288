package accuracy

import "testing"

// opFor is an op kind whose loosest class is the key.
var opFor = map[string]string{"exact": "soft_split", "elementwise": "layernorm", "gemm": "gemm", "sampling": "ms_deform_attn",
	"detector": "ddetr_transformer", "network": "vit"}

func TestReducedPrecisionLoosensProductClassesOnly(t *testing.T) {
	for _, c := range []struct {
		backend, class, want string
	}{
		{"cuda", "gemm", "gemm"},
		{"cpu", "network", "network"},
		{"cuda-tf32", "gemm", "gemm@tf32"},
		{"cuda-bf16", "network", "network@bf16"},
		{"cuda-fp16", "detector", "detector@fp16"},
		{"cuda-bf16", "elementwise", "elementwise"},
		{"cuda-bf16", "exact", "exact"},
		{"my-backend", "gemm", "gemm"},
	} {
		got, err := Lookup(c.class, opFor[c.class], c.backend)
		if err != nil {
			t.Fatal(err)
		}
		if got.Class != c.want {
			t.Errorf("Lookup(%q, %q).Class = %q, want %q", c.class, c.backend, got.Class, c.want)
		}
		base := classes[c.class]
		if c.want != c.class && !(got.NMSE > base.NMSE || got.RTol > base.RTol) {
			t.Errorf("%s on %s: %+v is not looser than %+v", c.class, c.backend, got, base)
		}
		if c.want == c.class && got != base {
			t.Errorf("%s on %s: %+v, want the fp32 class %+v", c.class, c.backend, got, base)
		}
	}
	// bf16 rounds harder than tf32 and fp16.
	bf, _ := Lookup("gemm", "gemm", "cuda-bf16")
	tf, _ := Lookup("gemm", "gemm", "cuda-tf32")
	if bf.NMSE <= tf.NMSE {
		t.Errorf("bf16 gemm NMSE %g not looser than tf32's %g", bf.NMSE, tf.NMSE)
	}
}

// TestPrecisionOverrides: an override for a precision applies to every
// backend of that precision (the GPU's and the emulator's) and to no
// other, keeps the class's name with the precision, and carries its reason.
func TestPrecisionOverrides(t *testing.T) {
	for _, b := range []string{"cuda-bf16", "cuda-emu-bf16", "cpu-bf16"} {
		tol, err := Lookup("network", "vqgan", b)
		if err != nil {
			t.Fatal(err)
		}
		if tol.Override == "" || tol.Class != "network@bf16" || tol.ATol != 2 {
			t.Errorf("%s: %+v, want the bf16 override", b, tol)
		}
	}
	for _, b := range []string{"cuda", "cuda-emu", "cuda-emu-tf32", "cpu"} {
		tol, err := Lookup("network", "vqgan", b)
		if err != nil {
			t.Fatal(err)
		}
		if tol.Override != "" {
			t.Errorf("%s: an override applied: %+v", b, tol)
		}
	}
	// Two-stage query rows are aligned within near-tied proposal scores (bench/runner), so the
	// detector is held to its class on every backend.
	for _, b := range []string{"cuda-emu-tf32", "cuda-emu-bf16", "cpu-bf16", "cuda-fp16"} {
		if tol, _ := Lookup("detector", "deformable_detr", b); tol.Override != "" {
			t.Errorf("deformable_detr on %s: an override applied: %+v", b, tol)
		}
	}
	if tol, _ := Lookup("gemm", "token_performer", "cuda-emu-fp16"); tol.Override == "" || tol.ATol != 5e-2 {
		t.Errorf("token_performer on fp16: %+v", tol)
	}
	if tol, _ := Lookup("gemm", "gemm", "cuda-emu-fp16"); tol.Override != "" {
		t.Errorf("gemm on fp16 took the performer's override: %+v", tol)
	}
}
