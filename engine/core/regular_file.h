// Inputs diagnose reads (job logs, rank and worker logs, YAML, a sweep history) must be regular
// files. Opening a FIFO for reading blocks until someone writes to it, and a device can block
// forever or have side effects: one such entry in an outputs dir would wedge a Slurm epilog or a
// watcher. So the file type is checked before the file is opened, and again on the descriptor
// (opened non-blocking) in case the entry was swapped in between.
#pragma once

#include <string>

#include "engine/core/status.h"

namespace diagnose {

// "a FIFO", "a character device", ... for a non-regular entry; "" for a regular file (symlinks are
// followed) or one that cannot be stat'ed.
std::string NonRegularKind(const std::string& path);

// kFailedPrecondition "PATH is a FIFO, not a regular file; refused without reading it" when `path`
// (symlinks followed) exists and is not a regular file; Ok otherwise (a missing file is the
// opener's to report).
Status RequireRegularFile(const std::string& path);

// open(2) of a regular file for reading (O_RDONLY | O_CLOEXEC), never blocking on a FIFO or device:
// the descriptor, or kNotFound / kPermissionDenied / kFailedPrecondition / kUnavailable naming `path`.
StatusOr<int> OpenRegularFileForReading(const std::string& path);

}  // namespace diagnose
