// A word as a POSIX shell reads it back unchanged: as it is when it holds only
// characters the shell leaves alone, else in single quotes (a quote in it as '\'').
// For the equivalent commands a run prints (tune's points, --model's options).
#pragma once

#include <string>

namespace ds {

std::string shell_word(const std::string& w);

}  // namespace ds
