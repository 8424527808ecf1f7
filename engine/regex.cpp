// llama.cpp matches -ot patterns with std::regex, which throws on a
// pattern it cannot read; uncaught, that ends the process. This checks a
// pattern with the same parser first.
#include <regex>
#include <cstring>

extern "C" int tb_regex_check(const char *pattern, char *err, int n) {
    try {
        std::regex re(pattern);
        return 1;
    } catch (const std::regex_error &e) {
        std::strncpy(err, e.what(), n - 1);
        err[n - 1] = 0;
        return 0;
    }
}
