# SPDX-License-Identifier: BSD-3-Clause
# find_package(psfsim): the imported target psfsim::psfsim (libpsfsim.so.0,
# include/psfsim.h). Its own libraries are linked into it: nothing else to find.
include("${CMAKE_CURRENT_LIST_DIR}/psfsimTargets.cmake")
