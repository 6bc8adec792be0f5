#include "app/set/measure.h"

#include "optics/metrics.h"

void image_set_measure(const image_set *s, image_info *info, float *img, double *strehl,
                       double *axial)
{
    int npix = s->samp.npix;
    image_set_finish_image(s, info, img);
    *strehl = metrics_peak(img, npix).value / info->ref_peak;
    *axial = img[(size_t)(npix / 2) * npix + npix / 2] / info->ref_peak;
}
