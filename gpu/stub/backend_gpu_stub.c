/* Built when the CUDA toolkit is absent: there is no GPU backend. */
#include "app/backend.h"

const psf_backend_ops *psf_backend_gpu(void) { return NULL; }
