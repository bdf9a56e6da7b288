package cuda

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// cuBLAS constants (cublas_api.h).
const (
	cublasOpN            = 0
	cublasOpT            = 1
	cublasDefaultMath    = 0
	cublasTF32TensorMath = 3

	// cudaDataType_t and cublasComputeType_t values for cublasGemmEx.
	cudaR32F                 = 0
	cublasCompute32F         = 68
	cublasCompute32FFast16F  = 74
	cublasCompute32FFast16BF = 75
	cublasCompute32FFastTF32 = 77
	cublasGemmDefault        = -1
)

// cublasStatusNames are cuBLAS's names for its status codes.
var cublasStatusNames = map[int32]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublas holds the cuBLAS entry points (the _v2 API).
type cublas struct {
	path string
	lt   string // the libcublasLt loaded from path's directory first; "" when none was

	cublasCreate              func(h *uintptr) int32
	cublasDestroy             func(h uintptr) int32
	cublasGetVersion          func(h uintptr, v *int32) int32
	cublasSetStream           func(h uintptr, stream cuHandle) int32
	cublasSetMathMode         func(h uintptr, mode int32) int32
	cublasGetStatusString     func(status int32) *byte // cuBLAS ≥ 11.4; may be nil
	cublasSgemm               func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a devicePtr, lda int32, b devicePtr, ldb int32, beta *float32, c devicePtr, ldc int32) int32
	cublasSgemmStridedBatched func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a devicePtr, lda int32, sa int64, b devicePtr, ldb int32, sb int64, beta *float32, c devicePtr, ldc int32, sc int64, batch int32) int32
	// The mixed-precision products (cuBLAS ≥ 11; nil when missing: the
	// bf16 and fp16 backends then report their GEMMs unsupported).
	cublasGemmEx               func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a devicePtr, atype int32, lda int32, b devicePtr, btype int32, ldb int32, beta *float32, c devicePtr, ctype int32, ldc int32, compute int32, algo int32) int32
	cublasGemmStridedBatchedEx func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a devicePtr, atype int32, lda int32, sa int64, b devicePtr, btype int32, ldb int32, sb int64, beta *float32, c devicePtr, ctype int32, ldc int32, sc int64, batch int32, compute int32, algo int32) int32
}

var (
	cublasOnce sync.Once
	cublasLib  *cublas
	cublasErr  error
)

// loadCuBLAS opens cuBLAS once ("cuBLAS not found: ..." when absent).
func loadCuBLAS() (*cublas, error) {
	cublasOnce.Do(func() { cublasLib, cublasErr = openCuBLAS() })
	return cublasLib, cublasErr
}

// openCuBLAS opens the first cuBLAS of cublasNames that loads, each
// candidate file after the libcublasLt beside it, and binds it.
func openCuBLAS() (*cublas, error) {
	lt := ""
	h, path, err := libSearch{what: "cuBLAS", names: cublasNames, open: func(p string) (uintptr, error) {
		var h uintptr
		var err error
		h, lt, err = dlopenWithLt(p)
		return h, err
	}}.run()
	if err != nil {
		return nil, err
	}
	c, err := bindCuBLAS(h, path)
	if err != nil {
		return nil, err
	}
	c.lt = lt
	return c, nil
}

// dlopenWithLt dlopens the libcublas at path after the libcublasLt of its
// directory (libcublas needs it, and finds it by SONAME only when that
// directory, a Python wheel's say, is on the loader's path). It returns
// the handle and the libcublasLt loaded ("" for none: a bare name, or no
// libcublasLt there); a libcublasLt loaded for a libcublas that then fails
// is closed, so that it cannot stand in for another version's.
func dlopenWithLt(path string) (uintptr, string, error) {
	var ltH uintptr
	lt := ""
	if strings.Contains(path, "/") {
		ltH, lt, _ = preloadFromDir(cublasLtPaths(path))
	}
	h, err := dlopenGlobal(path)
	if err != nil {
		if ltH != 0 {
			purego.Dlclose(ltH)
		}
		return 0, "", err
	}
	return h, lt, nil
}

// cublasLtPaths lists the libcublasLt files beside the libcublas at path,
// best first: libcublasLt.so.<N> for libcublas.so.<N>, then any
// libcublasLt.so*.
func cublasLtPaths(path string) []string {
	dir, base := filepath.Split(path)
	var exact []string
	if _, ver, ok := strings.Cut(base, ".so."); ok {
		major, _, _ := strings.Cut(ver, ".")
		exact = append(exact, filepath.Join(dir, "libcublasLt.so."+major))
	}
	return existingFirst(exact, filepath.Join(dir, "libcublasLt.so*"))
}

// bindCuBLAS binds the cuBLAS entry points from the library with handle h
// (libcublas, or the CUDA emulator's library), loaded from path.
func bindCuBLAS(h uintptr, path string) (*cublas, error) {
	c := &cublas{path: path}
	if err := bindAll("libcublas", h, []symbol{
		{&c.cublasCreate, "cublasCreate_v2"}, {&c.cublasDestroy, "cublasDestroy_v2"},
		{&c.cublasGetVersion, "cublasGetVersion_v2"}, {&c.cublasSetStream, "cublasSetStream_v2"},
		{&c.cublasSetMathMode, "cublasSetMathMode"}, {&c.cublasSgemm, "cublasSgemm_v2"},
		{&c.cublasSgemmStridedBatched, "cublasSgemmStridedBatched"},
	}); err != nil {
		return nil, err
	}
	bindOptional(h, symbol{&c.cublasGetStatusString, "cublasGetStatusString"})
	if !bindOptional(h, symbol{&c.cublasGemmEx, "cublasGemmEx"}) ||
		!bindOptional(h, symbol{&c.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx"}) {
		c.cublasGemmEx, c.cublasGemmStridedBatchedEx = nil, nil
	}
	return c, nil
}

// check turns a cublasStatus_t into an error with cuBLAS's name for it.
func (c *cublas) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	name, ok := cublasStatusNames[code]
	if !ok {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	text := ""
	if c.cublasGetStatusString != nil {
		text = cString(c.cublasGetStatusString(code))
	}
	return &apiError{API: "cuBLAS", Call: call, Code: int(code), Name: name, Text: text}
}

// formatCuBLASVersion turns cublasGetVersion's major·10000 + minor·100 +
// patch into "12.4.5".
func formatCuBLASVersion(v int32) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}
