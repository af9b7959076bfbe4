package lua

import (
	"fmt"
	"strings"
)

// Minify returns the form of a health script that lua/gen ships to argocd-cm:
// comments and indentation removed, each token written as it is in src. Argo
// CD compiles the script text on every evaluation, and gopher-lua's lexer
// pays for every byte it scans, comments and indentation included.
//
// It is a transform on Lua tokens, as gopher-lua lexes them (names and
// keywords, numbers, '…' and "…" strings, long strings [[…]] and [==[…]==],
// comments -- and --[[…]], operators), never on text: a string's bytes are
// copied as they are. Two tokens are separated by what the source had between
// them only when that was a line break (so a line number in an error names the
// same line of the readable source), by one space only where they would
// otherwise lex as something else (two names, 1 ..), and by nothing
// otherwise.
//
// One convention goes beyond the lexer: a long string of level two,
// [==[…]==], holds Lua code that the script compiles lazily with loadstring,
// and its content is minified the same way (it stays a [==[…]==] string).
// Data in a long string must use another level.
//
// Minify checks its own output: lexing it must give the source's tokens (the
// code strings' contents compared token by token).
func Minify(src string) (string, error) {
	out, err := minify(src)
	if err != nil {
		return "", err
	}
	if err := sameTokens(src, out); err != nil {
		return "", fmt.Errorf("minified script does not lex as its source: %v", err)
	}
	return out, nil
}

// codeLevel is the long-string level that marks Lua code (see Minify).
const codeLevel = 2

type tokKind int

const (
	tokName tokKind = iota // names and keywords
	tokNumber
	tokString     // '…' or "…", escapes and all
	tokLongString // [=*[…]=*]
	tokOp
)

type token struct {
	kind tokKind
	text string // as in the source
	// level is a long string's number of '='; lines is the number of line
	// breaks between the previous token (or the start) and this one.
	level, lines int
}

// lexLua splits src into tokens, dropping whitespace and comments. It also
// returns the line breaks after the last token.
//
// test/conformance-v3/lua (FuzzMinify) keeps a copy of it and of the
// declarations it uses, from codeLevel to isNameByte; its
// TestCopiesOfPackageLua fails when the copy differs from them.
func lexLua(src string) ([]token, int, error) {
	if k := strings.IndexByte(src, '\r'); k >= 0 {
		return nil, 0, fmt.Errorf("line %d: carriage return", 1+strings.Count(src[:k], "\n"))
	}
	var toks []token
	var err error
	lines := 0
	line := 1
	i := 0
	for i < len(src) {
		c := src[i]
		start := i
		switch {
		case c == '\n':
			lines++
			line++
			i++
			continue
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\r':
			return nil, 0, fmt.Errorf("line %d: carriage return", line)
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			i += 2
			if lvl, ok := longBracket(src[i:]); ok {
				end, n, err := longEnd(src, i+lvl+2, lvl)
				if err != nil {
					return nil, 0, fmt.Errorf("line %d: comment: %v", line, err)
				}
				lines += n
				line += n
				i = end
				continue
			}
			if strings.HasPrefix(src[i:], "[=") {
				// gopher-lua reads --[= as the start of a long comment
				return nil, 0, fmt.Errorf("line %d: invalid long comment", line)
			}
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\r' {
					return nil, 0, fmt.Errorf("line %d: carriage return", line)
				}
				i++
			}
			continue
		case isNameStart(c):
			for i < len(src) && isNameByte(src[i]) {
				i++
			}
			toks = append(toks, token{kind: tokName, text: src[start:i], lines: lines})
		case isDecimal(c) || c == '.' && i+1 < len(src) && isDecimal(src[i+1]):
			if i, err = scanNumber(src, i); err != nil {
				return nil, 0, fmt.Errorf("line %d: %v", line, err)
			}
			toks = append(toks, token{kind: tokNumber, text: src[start:i], lines: lines})
		case c == '"' || c == '\'':
			i++
			for {
				if i >= len(src) || src[i] == '\n' || src[i] == '\r' {
					return nil, 0, fmt.Errorf("line %d: unterminated string", line)
				}
				if src[i] == c {
					i++
					break
				}
				if src[i] == '\\' && i+1 < len(src) {
					if src[i+1] == '\r' {
						return nil, 0, fmt.Errorf("line %d: carriage return", line)
					}
					if src[i+1] == '\n' {
						line++
					}
					i++
				}
				i++
			}
			toks = append(toks, token{kind: tokString, text: src[start:i], lines: lines})
		case c == '[':
			if lvl, ok := longBracket(src[i:]); ok {
				end, n, err := longEnd(src, i+lvl+2, lvl)
				if err != nil {
					return nil, 0, fmt.Errorf("line %d: long string: %v", line, err)
				}
				line += n
				i = end
				toks = append(toks, token{kind: tokLongString, text: src[start:i], level: lvl, lines: lines})
				break
			}
			if strings.HasPrefix(src[i:], "[=") {
				return nil, 0, fmt.Errorf("line %d: invalid long string", line) // as gopher-lua reads [=
			}
			i++
			toks = append(toks, token{kind: tokOp, text: "[", lines: lines})
		default:
			op := ""
			for _, o := range []string{"...", "..", "==", "~=", "<=", ">=", "::"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-*/%^#()={}[];:,.<>", rune(c)) {
					return nil, 0, fmt.Errorf("line %d: unexpected byte %q", line, c)
				}
				op = src[i : i+1]
			}
			i += len(op)
			toks = append(toks, token{kind: tokOp, text: op, lines: lines})
		}
		lines = 0
	}
	return toks, lines, nil
}

// longBracket reports whether s starts with a long bracket [=*[ and its level.
func longBracket(s string) (int, bool) {
	if len(s) == 0 || s[0] != '[' {
		return 0, false
	}
	n := 1
	for n < len(s) && s[n] == '=' {
		n++
	}
	if n < len(s) && s[n] == '[' {
		return n - 1, true
	}
	return 0, false
}

// longEnd finds the ]=*] of level lvl from src[i:] and returns the index
// after it and the line breaks before it.
func longEnd(src string, i, lvl int) (int, int, error) {
	closer := "]" + strings.Repeat("=", lvl) + "]"
	k := strings.Index(src[i:], closer)
	if k < 0 {
		return 0, 0, fmt.Errorf("no closing %s", closer)
	}
	body := src[i : i+k]
	if strings.Contains(body, "\r") {
		return 0, 0, fmt.Errorf("carriage return")
	}
	return i + k + len(closer), strings.Count(body, "\n"), nil
}

// scanNumber returns the end of the number at src[i:], exactly as
// gopher-lua's scanner reads one: 0x and hex digits; or a first byte (a digit
// or '.'), digits, a '.' and digits, and after an e or E an optional sign, any
// one byte and digits.
func scanNumber(src string, i int) (int, error) {
	if strings.HasPrefix(src[i:], "0x") || strings.HasPrefix(src[i:], "0X") {
		i += 2
		j := i
		for i < len(src) && isHex(src[i]) {
			i++
		}
		if i == j {
			return 0, fmt.Errorf("illegal hexadecimal number")
		}
		return i, nil
	}
	digits := func() {
		for i < len(src) && isDecimal(src[i]) {
			i++
		}
	}
	i++
	digits()
	if i < len(src) && src[i] == '.' {
		i++
		digits()
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i < len(src) {
			i++
		}
		digits()
	}
	return i, nil
}

func isDecimal(c byte) bool   { return '0' <= c && c <= '9' }
func isHex(c byte) bool       { return isDecimal(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || isDecimal(c) }

// needSpace reports whether a and b written side by side would lex as
// something else than a then b.
func needSpace(a, b token) bool {
	x, y := a.text[len(a.text)-1], b.text[0]
	switch {
	case isNameByte(x) && isNameByte(y):
		return true // two names, a name and a number, 1 e…
	case a.kind == tokNumber && (y == '.' || isNameByte(y)):
		return true // 1 .. x
	case a.kind == tokNumber && (x == 'e' || x == 'E') && (y == '+' || y == '-'):
		return true // 0x1e - 1 (Lua 5.1's own lexer would read 0x1e-1 as one number)
	case x == '.' && (y == '.' || isDecimal(y) && a.text == "."):
		return true
	case x == '-' && y == '-':
		return true // a - -b is not a comment
	case x == '[' && (y == '[' || y == '='):
		return true // t[ [[k]] ] is not a long string
	case y == '=' && strings.IndexByte("=<>~", x) >= 0:
		return true
	case x == ':' && y == ':':
		return true
	}
	return false
}

func minify(src string) (string, error) {
	toks, _, err := lexLua(src)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for k, t := range toks {
		switch {
		case t.lines > 0:
			b.WriteString(strings.Repeat("\n", t.lines))
		case k > 0 && needSpace(toks[k-1], t):
			b.WriteByte(' ')
		}
		if t.kind == tokLongString && t.level == codeLevel {
			open := "[" + strings.Repeat("=", codeLevel) + "["
			body := t.text[len(open) : len(t.text)-len(open)]
			code, err := minify(body)
			if err != nil {
				return "", fmt.Errorf("code in a %s…%s string: %v", open, strings.Replace(open, "[", "]", 2), err)
			}
			// Lua drops a line break right after the opening bracket: keep the
			// content's first line where it was.
			if strings.HasPrefix(code, "\n") && !strings.HasPrefix(body, "\n") {
				code = "\n" + code
			}
			b.WriteString(open + code + strings.Replace(open, "[", "]", 2))
			continue
		}
		b.WriteString(t.text)
	}
	if len(toks) > 0 {
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// sameTokens reports how out's tokens differ from src's, comparing the content
// of code long strings token by token; each token must also be as many lines
// after the previous one as in src.
func sameTokens(src, out string) error {
	a, _, err := lexLua(src)
	if err != nil {
		return err
	}
	b, _, err := lexLua(out)
	if err != nil {
		return err
	}
	if len(a) != len(b) {
		return fmt.Errorf("%d tokens, want %d", len(b), len(a))
	}
	for k := range a {
		if a[k].kind != b[k].kind || a[k].level != b[k].level {
			return fmt.Errorf("token %d is %q, want %q", k, b[k].text, a[k].text)
		}
		if a[k].lines != b[k].lines {
			return fmt.Errorf("token %d (%q) is %d lines after the previous one, want %d", k, a[k].text, b[k].lines, a[k].lines)
		}
		if a[k].kind == tokLongString && a[k].level == codeLevel {
			// Compare what Lua compiles: the content without a first line break.
			n := codeLevel + 2
			body := func(t string) string { return strings.TrimPrefix(t[n:len(t)-n], "\n") }
			if err := sameTokens(body(a[k].text), body(b[k].text)); err != nil {
				return fmt.Errorf("in code string (token %d): %v", k, err)
			}
			continue
		}
		if a[k].text != b[k].text {
			return fmt.Errorf("token %d is %q, want %q", k, b[k].text, a[k].text)
		}
	}
	return nil
}

// CodeStrings returns the bodies, trimmed, of src's long strings at the code level: the Lua
// that Minify keeps as code inside loadstring (test/conformance-v3's FuzzMinify uses it to tell
// such code from data in an error message).
func CodeStrings(src string) ([]string, error) {
	toks, _, err := lexLua(src)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, tok := range toks {
		if tok.kind == tokLongString && tok.level == codeLevel {
			out = append(out, strings.TrimSpace(tok.text[codeLevel+2:len(tok.text)-codeLevel-2]))
		}
	}
	return out, nil
}
