// Where rules/ and playbooks/ are read from when the user names no directory.
#pragma once

#include <string>

namespace diagnose {

// $DIAGNOSE_DATA_DIR when set; else <prefix>/share/diagnose when this binary runs from an install
// tree (<prefix>/bin/diagnose, `cmake --install`); else the directory chosen at configure time
// (-DDIAGNOSE_DATA_DIR=..., by default the source tree it was built from).
std::string DefaultDataDir();

}  // namespace diagnose
