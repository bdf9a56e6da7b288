package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// attentionFused is attentionCore's fused path: the same tasks of (image,
// head, block of query rows), each one call of kern.Attention, which walks
// its queries in blocks against blocks of keys with an online softmax, so
// that no score matrix larger than one tile of 96 queries by 256 keys
// exists. Per task it computes
//
//	for r0 ≤ i < r1, c < d:
//	  ctx[img, i, h·d+c] = Σ_j softmax_j(scale·q_i·k_j)·v[j, c]
//
// over keys j < n (j ≤ i with Causal), where q, k and v are head h's
// columns of qkv. With Causal a task packs only the keys its last row
// sees.
func (b *Backend) attentionFused(a ops.AttentionCore, qkv, ctx []float32, blocks, rows int) {
	e, n, hd := a.Heads*a.HeadDim, a.Tokens, a.HeadDim
	forQueryBlocks(b.threads, a.Batch, a.Heads, n, blocks, rows, func(_, img, h, r0, r1 int) {
		base := qkv[img*n*3*e:]
		q, k, v := base[r0*3*e+h*hd:], base[e+h*hd:], base[2*e+h*hd:]
		keys := n
		if a.Causal {
			keys = r1
		}
		kern.Attention(r1-r0, keys, hd, q, 3*e, k, 3*e, v, 3*e, ctx[(img*n+r0)*e+h*hd:], e,
			float32(a.Scale), kern.AttentionMask{Causal: a.Causal, Diag: r0})
	})
}

// fusedAttention reports whether attention with score blocks of rows
// queries by n keys goes fused: when the unfused path's score block (one
// per worker) would exceed fusedMinScoreBytes. cpu-bf16 stays unfused:
// its products round their inputs to bf16, which kern.Attention does not.
//
// Measured on the 2-core Zen 4 (1 MiB L2 per core, 32 MiB L3;
// docs/cpu-attention.md has the table and the command), fused/unfused
// in one process: the fused path loses 0–10% up to 400 tokens, is within
// ±5% at 577 (ViT-B/16 and VOLO at 384: 1.3 MiB blocks), wins 4–25% from
// 784 tokens with several heads (2.4 MiB blocks) and about 1.2× at 1024,
// and 1.3–1.5× on T2T's first token layer (3136 tokens, one head split
// between the workers: 19.6 MiB blocks). Below about twice the L2 the
// score block still streams from L3 fast enough that the unfused GEMMs'
// larger tiles win.
func (b *Backend) fusedAttention(rows, n int) bool {
	if b.bf16 {
		return false
	}
	switch attentionPath {
	case pathFused:
		return true
	case pathUnfused:
		return false
	}
	return rows*n*4 > fusedMinScoreBytes
}

// fusedMinScoreBytes is the largest score block attention_core computes
// whole: twice the L2 of the Zen 4 core it was measured on.
const fusedMinScoreBytes = 2 << 20

// attentionPath forces one path of attention_core, for the tests and
// the A/B benchmark that compare them; pathAuto (the default) applies
// fusedAttention's rule.
var attentionPath = pathAuto

const (
	pathAuto = iota
	pathFused
	pathUnfused
)
