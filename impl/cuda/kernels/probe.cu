// The probe Open launches before it declares a backend available: compile,
// load, a launch of several blocks, a barrier and warp shuffles, checked on
// the host. For i < n, with blocks of blockDim.x threads:
//   out[i] = Σ_{t < blockDim.x} t + i  =  blockDim.x·(blockDim.x − 1)/2 + i
extern "C" __global__ void probe_f32(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = block_sum((float)threadIdx.x);
  if (i < n) out[i] = s + (float)i;
}
