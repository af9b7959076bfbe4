package lua

import (
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzMinify needs two things of package lua that are not its API: the cases of its TestMinify
// (FuzzMinify's seeds) and its Lua lexer (for dataInCodeString, FuzzMinify's skip rule). They
// are copied below, declaration for declaration as they are in lua/minify_test.go and
// lua/minify.go, and TestCopiesOfPackageLua fails when a copy differs from its original.

// copied names each declaration copied here and the file of package lua it comes from.
var copied = map[string]string{
	"minifyCases": "minify_test.go",
	"codeLevel":   "minify.go",
	"tokKind":     "minify.go",
	"tokName":     "minify.go", // the const block of the token kinds
	"token":       "minify.go",
	"lexLua":      "minify.go",
	"longBracket": "minify.go",
	"longEnd":     "minify.go",
	"scanNumber":  "minify.go",
	"isDecimal":   "minify.go",
	"isHex":       "minify.go",
	"isNameStart": "minify.go",
	"isNameByte":  "minify.go",
}

// TestCopiesOfPackageLua checks that each declaration in copied is, without its doc comment,
// the same text here as in package lua.
func TestCopiesOfPackageLua(t *testing.T) {
	here := declarations(t, "copies_test.go")
	there := map[string]map[string]string{}
	for name, file := range copied {
		if there[file] == nil {
			there[file] = declarations(t, filepath.Join(luaDir, file))
		}
		want, ok := there[file][name]
		if !ok {
			t.Errorf("lua/%s no longer declares %s: update copies_test.go", file, name)
			continue
		}
		if here[name] != want {
			t.Errorf("%s differs from its original in lua/%s: copy it again", name, file)
		}
	}
}

// declarations returns the source text, doc comments left out, of each top-level declaration
// of the Go file at path, keyed by name (a const, var or type block by each of its names;
// methods left out).
func declarations(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out[d.Name.Name] = text(d)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out[s.Name.Name] = text(d)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out[n.Name] = text(d)
					}
				}
			}
		}
	}
	return out
}

// dataInCodeString reports whether msg shows the content of one of src's
// [==[ ]==] strings: the script used it as data, which Minify's convention
// excludes.
func dataInCodeString(src, msg string) bool {
	toks, _, err := lexLua(src)
	if err != nil {
		return false
	}
	for _, tok := range toks {
		if tok.kind == tokLongString && tok.level == codeLevel {
			body := strings.TrimSpace(tok.text[codeLevel+2 : len(tok.text)-codeLevel-2])
			if body != "" && strings.Contains(msg, body) {
				return true
			}
		}
	}
	return false
}

// minifyCases are TestMinify's cases (lua/minify_test.go).
var minifyCases = []struct{ name, src, want string }{
	{"comments and indentation", "-- header\n-- more\nlocal x = 1 -- trailing\n  if x then\n\treturn x\n  end\n", "\n\nlocal x=1\nif x then\nreturn x\nend\n"},
	{"long comment keeps its lines", "--[[ a\nb ]] x = 1\n--[==[ ]] ]=] ]==]y = 2\n", "\nx=1\ny=2\n"},
	{"comment at the end", "return 1\n-- bye\n\n", "return 1\n"},
	{"no newline at the end", "return 1", "return 1\n"},
	{"string content untouched", `x = "a -- not a comment  " .. 'it''s' .. "q\"  -- q" .. "\\" .. '\'' .. "[[ ]]"` + "\n", `x="a -- not a comment  "..'it''s'..` + `"q\"  -- q".."\\"..'\''.."[[ ]]"` + "\n"},
	{"backslash-newline in a string", "x = \"a\\\n  b\"  -- c\ny = 1\n", "x=\"a\\\n  b\"\ny=1\n"},
	{"data long strings untouched", "a = [[ -- x\n  y ]]\nb = [=[ ]] -- ]=]\nc = [===[\n  z ]===]\n", "a=[[ -- x\n  y ]]\nb=[=[ ]] -- ]=]\nc=[===[\n  z ]===]\n"},
	{"code long string minified", "f = loadstring([==[\n  local a = \"  s  \" -- c\n  return a\n]==])\n", "f=loadstring([==[\nlocal a=\"  s  \"\nreturn a\n]==])\n"},
	{"code long string starting with a comment", "f = [==[-- c\nreturn 1 ]==]\n", "f=[==[\n\nreturn 1\n]==]\n"},
	{"code long string with data strings", "f = [==[ return [[ a  b ]], [=[ c ]=] ]==]\n", "f=[==[return[[ a  b ]],[=[ c ]=]\n]==]\n"},
	{"numbers", "a = 1 .. x .. 2.5e+3 .. 0x1F - .5 + 1e5 * 3 % 2 ^ 0xe - 1\n", "a=1 ..x..2.5e+3 ..0x1F-.5+1e5*3%2^0xe -1\n"},
	{"minus minus is not a comment", "x = 3 - -2 - - - y\n", "x=3- -2- - -y\n"},
	{"bracket bracket is not a long string", "x = t[ [[k]] ] + t[ [=[k]=] ]\n", "x=t[ [[k]]]+t[ [=[k]=]]\n"},
	{"operators", "a = b == c and d ~= e or f <= g and h >= i; local t = {...}; x = a .. b .. ...\n", "a=b==c and d~=e or f<=g and h>=i;local t={...};x=a..b.. ...\n"},
	{"numbers as gopher-lua reads them", "a = 0eA .. .5.3 .. 1e+x\n", "a=0eA .. .5.3 ..1e+x\n"},
	{"dots and numbers", "x = a .. .5 .. b\n", "x=a.. .5 ..b\n"},
	{"assignment then comparison", "x = = y\n", "x= =y\n"},
	{"ambiguous call keeps its line", "local a = f\n(g)()\n", "local a=f\n(g)()\n"},
	{"keywords and names", "local function f ( a , b ) return not a end\n", "local function f(a,b)return not a end\n"},
	{"empty", "-- only a comment\n", ""},
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
