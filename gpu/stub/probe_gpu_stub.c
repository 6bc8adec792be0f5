/* Built without CUDA: there are no GPU figures to measure. */
#include <stdio.h>

#include "gpu/gpu_probe.h"

int gpu_probe_basics(gpu_basics *out, char *err, size_t errlen)
{
    (void)out;
    snprintf(err, errlen, "gpu probe: psfsim was built without CUDA");
    return -1;
}

int gpu_runtime_version(void) { return 0; }
int gpu_cufft_version(void) { return 0; }
