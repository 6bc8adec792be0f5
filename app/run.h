/* The psfsim command's job: config -> image set -> backend -> files. */
#ifndef PSFSIM_RUN_H
#define PSFSIM_RUN_H

#include "cli.h"

/* Run the job o describes. Returns the exit status: 0 every image written,
 * 2 usage or config error (nothing written), 3 run-time failure (the
 * manifest lists the images written). Messages go through the logger. */
int psfsim_run(const cli_options *o);

#endif
