package cuda

import "fmt"

// Math is how a backend's cuBLAS products (GEMMs, attention, convolution)
// are computed, and on BF16 and FP16 how Deformable DETR's sampling reads
// its value tensor. Tensors stay fp32 in device memory for every mode and
// every sum is accumulated in fp32. What runs in reduced precision:
// the products' inputs, rounded inside cuBLAS (TF32, BF16, FP16); and on
// BF16 and FP16 the value tensor of ms_deform_attn_core and ms_deform_attn,
// rounded (to nearest even) into a bf16 / half copy in scratch that the
// sampling kernel gathers from (when the head dimension is a multiple of
// 4; msdPathFor), widening each value to fp32 before weighting it. Every
// other kernel, and the sampling's weights, locations and softmax, compute
// in fp32.
type Math int

const (
	// FP32 is strict fp32 (cublasSgemm, default math): backend "cuda".
	FP32 Math = iota
	// TF32 rounds the products' inputs to TF32 (10-bit mantissa) for the
	// tensor cores (CUBLAS_TF32_TENSOR_OP_MATH): backend "cuda-tf32".
	TF32
	// BF16 rounds them to bfloat16 (8-bit mantissa) with fp32 accumulation
	// (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_16BF), and the msdeform
	// sampling gathers a bfloat16 copy of value: backend "cuda-bf16".
	BF16
	// FP16 rounds them to IEEE half (11-bit mantissa) with fp32
	// accumulation (CUBLAS_COMPUTE_32F_FAST_16F), and the msdeform sampling
	// gathers a half copy of value: backend "cuda-fp16".
	FP16
)

// BackendName is the registered backend name for m.
func (m Math) BackendName() string {
	switch m {
	case TF32:
		return "cuda-tf32"
	case BF16:
		return "cuda-bf16"
	case FP16:
		return "cuda-fp16"
	}
	return "cuda"
}

// Describe is Info's "math" detail for m.
func (m Math) Describe() string {
	switch m {
	case TF32:
		return "tf32 products, fp32 accumulation (cuBLAS tensor cores)"
	case BF16:
		return "bf16 products, fp32 accumulation and storage (cuBLAS COMPUTE_32F_FAST_16BF); msdeform sampling gathers bf16 value"
	case FP16:
		return "fp16 products, fp32 accumulation and storage (cuBLAS COMPUTE_32F_FAST_16F); msdeform sampling gathers fp16 value"
	}
	return "fp32"
}

// computeType is the cublasComputeType_t cublasGemmEx is given for m.
func (m Math) computeType() int32 {
	switch m {
	case TF32:
		return cublasCompute32FFastTF32
	case BF16:
		return cublasCompute32FFast16BF
	case FP16:
		return cublasCompute32FFast16F
	}
	return cublasCompute32F
}

func (m Math) String() string {
	if m < FP32 || m > FP16 {
		return fmt.Sprintf("Math(%d)", int(m))
	}
	return m.BackendName()
}
