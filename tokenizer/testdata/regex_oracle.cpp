// regex_oracle runs a pre-tokenizer regex through std::regex the way
// llama.cpp's unicode_regex_split does for regexes without a hand-written
// matcher: on a "collapsed" text with one byte per code point (ASCII kept,
// other whitespace -> 0x0B, letters -> 0xD2, numbers -> 0xD1, punctuation ->
// 0xD3, marks -> 0xD4, symbols -> 0xD5, anything else -> 0xD0), with \p{..}
// in the regex replaced by the matching byte plus its ASCII members.
//
// Used by TestPreTokenizerOracle (set TOKENIZER_REGEX_ORACLE to the built
// binary): g++ -O2 -std=c++17 -o /tmp/regex_oracle regex_oracle.cpp
//
// Usage: regex_oracle NAME, then one hex-encoded collapsed text per stdin
// line; prints the word lengths (in code points) of each.
#include <cstdio>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

static std::string collapse_regex(const std::string & re) {
    // \p{N} -> \xD1 0-9, \p{L} -> \xD2 A-Za-z, \p{P} -> \xD3 + ASCII punctuation
    struct { const char * pat; std::string rep; } cats[] = {
        {"\\p{N}", std::string("\xD1") + "\x30-\x39"},
        {"\\p{L}", std::string("\xD2") + "\x41-\x5A\x61-\x7A"},
        {"\\p{P}", std::string("\xD3") + "\x21-\x23\x25-\x2A\x2C-\x2F\x3A-\x3B\x3F-\x40\\\x5B-\\\x5D\x5F\\\x7B\\\x7D"},
    };
    std::string out;
    bool inside = false;
    for (size_t i = 0; i < re.size(); ++i) {
        if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) { out += '['; inside = true; continue; }
        if (inside && re[i] == ']' && re[i - 1] != '\\') { out += ']'; inside = false; continue; }
        bool done = false;
        for (auto & c : cats) {
            std::string p = c.pat;
            if (re.compare(i, p.size(), p) == 0) {
                if (!inside) out += '[';
                out += c.rep;
                if (!inside) out += ']';
                i += p.size() - 1;
                done = true;
                break;
            }
        }
        if (!done) out += re[i];
    }
    return out;
}

int main(int argc, char ** argv) {
    if (argc != 2) { fprintf(stderr, "usage: regex_oracle qwen2|punct|num|digits3\n"); return 2; }
    std::string name = argv[1], re;
    if (name == "qwen2") {
        re = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    } else if (name == "llama3") {
        re = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    } else if (name == "gpt2") {
        re = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
    } else if (name == "punct") {
        re = "[\\p{P}\\$\\+<=>\\^~\\|]+";
    } else if (name == "num") {
        re = "\\p{N}+";
    } else if (name == "digits3") {
        re = "[0-9][0-9][0-9]";
    } else {
        fprintf(stderr, "unknown regex %s\n", name.c_str());
        return 2;
    }
    std::regex expr(collapse_regex(re), std::regex_constants::optimize | std::regex_constants::nosubs);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::string text;
        for (size_t i = 0; i + 1 < line.size(); i += 2) {
            text += (char) std::stoi(line.substr(i, 2), nullptr, 16);
        }
        std::vector<size_t> offs;
        std::regex_iterator<const char *> it(text.data(), text.data() + text.size(), expr), end;
        int64_t start = 0;
        for (; it != end; ++it) {
            auto m = *it;
            if (m.position() > start) offs.push_back(m.position() - start);
            offs.push_back(m.length());
            start = m.position() + m.length();
        }
        if (start < (int64_t) text.size()) offs.push_back(text.size() - start);
        for (size_t i = 0; i < offs.size(); ++i) printf("%s%zu", i ? " " : "", offs[i]);
        printf("\n");
        fflush(stdout);
    }
}
