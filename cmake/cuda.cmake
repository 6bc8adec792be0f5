# Decide whether to build the CUDA backend and define the psfsim_gpu target.
# With CUDA: nvcc compiles gpu/*.cu for sm_90 with PTX for later chips
# (CMAKE_CUDA_ARCHITECTURES overrides); cudart is linked statically so psfsim
# starts on a machine with no driver, and cuFFT and cuBLAS (the MFT's matrix
# products) are linked as shared libraries.
# Without CUDA there is no module and psfsim is CPU-only (app/gpu_module.c).
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
  file(GLOB PSFSIM_GPU_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/gpu/*.cu ${PROJECT_SOURCE_DIR}/gpu/*.c)
  # One set of objects (position independent) for the static library that
  # tests and benchmarks link and for the module psfsim loads at run time.
  add_library(psfsim_gpu_objs OBJECT ${PSFSIM_GPU_SRC})
  set_target_properties(psfsim_gpu_objs PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(psfsim_gpu_objs PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(psfsim_gpu_objs PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>
                                                 $<$<COMPILE_LANGUAGE:C>:${PSFSIM_C_WARNINGS}>)
  target_link_libraries(psfsim_gpu_objs PUBLIC CUDA::cudart_static CUDA::cufft CUDA::cublas)
  add_library(psfsim_gpu STATIC $<TARGET_OBJECTS:psfsim_gpu_objs>)
  target_link_libraries(psfsim_gpu PUBLIC psfsim_optics CUDA::cudart_static CUDA::cufft CUDA::cublas)
  target_compile_definitions(psfsim_gpu PUBLIC PSFSIM_HAVE_CUDA=1)
  target_include_directories(psfsim_gpu PUBLIC ${PROJECT_SOURCE_DIR})
  set_property(TARGET psfsim_optics PROPERTY POSITION_INDEPENDENT_CODE ON)
  # libpsfsim-gpu.so beside psfsim (app/gpu_module.c finds it there).
  add_library(psfsim_gpu_module MODULE $<TARGET_OBJECTS:psfsim_gpu_objs>)
  target_link_libraries(psfsim_gpu_module PRIVATE psfsim_gpu)
  set_target_properties(psfsim_gpu_module PROPERTIES OUTPUT_NAME psfsim-gpu
                        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  install(TARGETS psfsim_gpu_module LIBRARY DESTINATION lib/psfsim)
  set(PSFSIM_CUDA_TOOLKIT_VERSION "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}")
else()
  message(STATUS "psfsim: building without the CUDA backend")
  set(PSFSIM_CUDA_TOOLKIT_VERSION "none")
endif()
