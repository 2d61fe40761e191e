// Leaks one device buffer: CTest's memcheck reports one "Memory Leak".
#include <cstdio>
#include <cuda_runtime.h>

static float *make_buffer(size_t n)
{
    float *p = nullptr;
    if (cudaMalloc(&p, n * sizeof *p) != cudaSuccess)
        return nullptr;
    return p;
}

int main()
{
    float *kept = make_buffer(1 << 20); // never freed
    std::printf("leaky: %s\n", kept ? "allocated" : "no GPU");
    return 0;
}
