# Cross-compiling the reproducers for the ARM guest (armhf, static).
#   cmake -S . -B build/arm -DCMAKE_TOOLCHAIN_FILE=cmake/arm-linux-gnueabihf.cmake
# Needs gcc-arm-linux-gnueabihf, libc6-dev-armhf-cross and an armhf libz.a
# (-DZLIB_STATIC=: the Makefile passes zlib1g-dev:armhf's, downloaded).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(KREPRO_ARCH arm CACHE STRING "guest arch the reproducers are built for")
# Libraries and headers of the target only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
