#include "engine/core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace diagnose {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

Status Refused(const std::string& path, const char* kind) {
  return FailedPreconditionError(path + " is " + kind + ", not a regular file; refused without reading it");
}

}  // namespace

std::string NonRegularKind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return KindOf(st.st_mode);
}

Status RequireRegularFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();
  if (const char* kind = KindOf(st.st_mode); *kind != '\0') return Refused(path, kind);
  return Status::Ok();
}

StatusOr<int> OpenRegularFileForReading(const std::string& path) {
  RETURN_IF_ERROR(RequireRegularFile(path));
  // O_NONBLOCK: a FIFO swapped in after the check must not block the open; O_NOCTTY: nor may a
  // terminal become ours.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    const std::string message = path + ": " + std::strerror(err);
    if (err == EACCES || err == EPERM) return PermissionDeniedError(message);
    if (err == ENOENT) return NotFoundError(message);
    return UnavailableError(message);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char* kind = KindOf(st.st_mode);
    ::close(fd);
    return Refused(path, *kind ? kind : "not a regular file");
  }
  // Reads of a regular file never block anyway; cleared so later reads behave as usual.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace diagnose
