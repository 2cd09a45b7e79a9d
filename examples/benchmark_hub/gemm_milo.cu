// The CUDA build of the benchmark hub's GEMM (CLBlast's Xgemm kernel, hub/kernels/gemm_milo/), as the hub's tuning
// script gemm_milo.py makes it for Kernel Tuner: cl_to_cuda.h (OpenCL keywords and types for CUDA), then the kernel's
// files in order. The script concatenates them into one string; here they are included, unmodified.
#include "hub/kernels/gemm_milo/cl_to_cuda.h"
#include "hub/kernels/gemm_milo/common.opencl"
#include "hub/kernels/gemm_milo/xgemm_part1.opencl"
#include "hub/kernels/gemm_milo/xgemm_part2.opencl"
#include "hub/kernels/gemm_milo/xgemm_part3.opencl"
#include "hub/kernels/gemm_milo/xgemm_part4.opencl"
