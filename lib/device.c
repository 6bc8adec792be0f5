/* SPDX-License-Identifier: BSD-3-Clause */
/* The device-memory functions of lib/psfsim.h (psfsim_device_*): the GPU
 * module's gpu_memory_ops (backend/gpu_abi.h), so that the Python package
 * and C callers without the CUDA runtime can hold device outputs. */
#include "app/select/gpu.h"
#include "lib/set_priv.h"

/* The module's memory table, or NULL with PSFSIM_ERR_BACKEND's message. */
static const gpu_memory_ops *memory(char *err, size_t errlen)
{
    lib_messages_init();
    const gpu_memory_ops *mem = gpu_module_memory();
    if (!mem)
        lib_fail(err, errlen, PSFSIM_ERR_BACKEND, "device memory needs the GPU module: %s",
                 gpu_module_error());
    return mem;
}

int psfsim_device_pointer(const void *p, int *kind, int *device, char *err, size_t errlen)
{
    int k = 0, dev = -1;
    if (!kind) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no kind given");
    const gpu_memory_ops *mem = memory(err, errlen);
    if (!mem) return PSFSIM_ERR_BACKEND;
    if (mem->pointer(p, &k, &dev, err, errlen) != 0) return PSFSIM_ERR_BACKEND;
    *kind = k;
    if (device) *device = dev;
    return PSFSIM_OK;
}

void *psfsim_device_alloc(int device, size_t bytes, char *err, size_t errlen)
{
    const gpu_memory_ops *mem = memory(err, errlen);
    return mem ? mem->alloc(device, bytes, err, errlen) : NULL;
}

void psfsim_device_free(int device, void *p)
{
    const gpu_memory_ops *mem = p ? gpu_module_memory() : NULL;
    if (mem) mem->release(device, p);
}

void *psfsim_host_alloc(size_t bytes, char *err, size_t errlen)
{
    const gpu_memory_ops *mem = memory(err, errlen);
    return mem ? mem->host_alloc(bytes, err, errlen) : NULL;
}

void psfsim_host_free(void *p)
{
    const gpu_memory_ops *mem = p ? gpu_module_memory() : NULL;
    if (mem) mem->host_release(p);
}

int psfsim_device_copy(int device, void *dst, const void *src, size_t bytes, char *err,
                       size_t errlen)
{
    if ((!dst || !src) && bytes > 0)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no source or destination given");
    const gpu_memory_ops *mem = memory(err, errlen);
    if (!mem) return PSFSIM_ERR_BACKEND;
    if (bytes == 0) return PSFSIM_OK;
    return mem->copy(device, dst, src, bytes, err, errlen) == 0 ? PSFSIM_OK : PSFSIM_ERR_COMPUTE;
}
