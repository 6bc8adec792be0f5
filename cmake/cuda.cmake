# SPDX-License-Identifier: BSD-3-Clause
# Decide whether to build the CUDA backend (gpu/CMakeLists.txt defines its
# targets): PSFSIM_HAVE_CUDA, the architectures (sm_90 unless
# CMAKE_CUDA_ARCHITECTURES says otherwise) and the toolkit's version.
# Without CUDA there is no module and psfsim is CPU-only (app/select/gpu_loader.c).
set(PSFSIM_HAVE_CUDA OFF)
if(NOT PSFSIM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(PSFSIM_HAVE_CUDA ON)
  elseif(PSFSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "PSFSIM_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

if(PSFSIM_HAVE_CUDA)
  message(STATUS "psfsim: building the CUDA backend (architectures ${CMAKE_CUDA_ARCHITECTURES})")
  set(CMAKE_CUDA_STANDARD 17)
  set(PSFSIM_CUDA_TOOLKIT_VERSION "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}")
else()
  message(STATUS "psfsim: building without the CUDA backend")
  set(PSFSIM_CUDA_TOOLKIT_VERSION "none")
endif()
