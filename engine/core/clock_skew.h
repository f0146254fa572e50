// Files on a shared file server carry that server's clock. When it runs ahead of this host's,
// mtimes lie in the future and "age" becomes meaningless; these helpers name that case.
#pragma once

namespace diagnose {

// Mtimes up to this far ahead of now are timestamp rounding, not a clock that disagrees.
inline constexpr double kClockSkewToleranceSeconds = 2;

}  // namespace diagnose
