# SPDX-License-Identifier: BSD-3-Clause
# cmake -DBIN2C=... -DNAME=... -DIN=... -DOUT=... -P bin2c.cmake: the file IN
# as the static const unsigned char array NAME in the header OUT (CUDA's
# bin2c; its length is sizeof NAME).
execute_process(COMMAND ${BIN2C} --const --static --name ${NAME} ${IN} OUTPUT_FILE ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bin2c failed on ${IN}: ${rc}")
endif()
