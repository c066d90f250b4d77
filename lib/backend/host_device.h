/* VT_HD: a function of the backend mathematics headers (det_loss_math.h, seg_loss_math.h,
 * optim_math.h) that the CPU backend compiles as plain C and nvcc as __host__ __device__, so
 * both backends run the same code. */
#ifndef VT_HOST_DEVICE_H
#define VT_HOST_DEVICE_H

#ifdef __CUDACC__
#define VT_HD __host__ __device__ static inline
#else
#define VT_HD static inline
#endif

#endif
