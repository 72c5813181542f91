#pragma once
// NumPy .npy files: the format tensors are read from and written to (inputs, outputs,
// counterexamples). Versions 1.0 and 2.0, C order, little-endian, one dtype per precision:
//
//   f64 '<f8'   f32 '<f4'   f16 '<f2'   i32 '<i4'   bf16 '<u2'
//
// NumPy has no bfloat16: bf16 tensors travel as <u2 arrays of their bit patterns, and every <u2
// array is read as a bf16 tensor (np.uint16 data written by other tools is therefore interpreted
// as bf16 bit patterns). Shape () is a scalar: dims {} with one cell.
//
// Errors are UserErrors located at the file: kExitMissingInput (66) when the file cannot be opened
// or read, kExitMalformed (65) for anything wrong inside it ("expected ... found ..."): bad magic,
// unsupported version, malformed header, big-endian or unsupported dtype, Fortran order, a
// declared shape whose data is not exactly what the file holds (checked before allocating, so a
// huge declared shape is an error, never a huge allocation). Writing goes through an AtomicFile
// (core/support/atomic_file.h): the file appears whole or not at all, and a failure is exit 73 (cannot
// create) or 74 (a write, flush or rename failed) naming the file.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/support/atomic_file.h"
#include "core/tensor.h"

namespace fp {

// The largest .npy file read: 16 GiB (2^31 f64 cells and their header). The reader refuses
// anything that is not a regular file (core/support/input_file.h).
inline constexpr std::size_t kMaxNpyFileBytes = std::size_t{16} << 30;

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);
// Streams t's file into `out` (not committed), a bounded block at a time: a large tensor is never
// held twice in memory.
void write_npy(AtomicFile& out, const Tensor& t);

// The same, on bytes in memory. `source` names the bytes in error messages.
Tensor parse_npy(std::string_view bytes, const std::string& source = "<memory>");
// A version 1.0 file (2.0 only if the header does not fit 1.0's 16-bit length). Values are
// written at the tensor's precision (a value not representable at it is rounded first).
std::string serialize_npy(const Tensor& t);

// The dtype string of a precision: "<f8", "<f4", "<f2", "<i4", "<u2".
const char* npy_descr(Prec p);

}  // namespace fp
