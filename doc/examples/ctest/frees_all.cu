// Frees what it allocates: no defects.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    float *p = nullptr;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
    std::printf("frees_all: done\n");
    return 0;
}
