// C = A B for square row-major matrices (n a multiple of 16), 16 x 16 tiles in shared memory.
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[16][16];
  __shared__ float tb[16][16];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < n / 16; ++t) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t * 16 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t * 16 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}
