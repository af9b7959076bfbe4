package lua

import (
	"strings"
	"testing"
)

// minifyCases are also FuzzMinify's seeds (test/conformance-v3/lua, which runs Minify's output
// through Argo CD v3.6.2's Lua VM and checks its copy of this table against this one).
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

func TestMinify(t *testing.T) {
	for _, c := range minifyCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Minify(c.src)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Minify(%q)\n got %q\nwant %q", c.src, got, c.want)
			}
			if again, err := Minify(got); err != nil || again != got {
				t.Errorf("not idempotent: %q, %v", again, err)
			}
		})
	}
}

func TestMinifyRefuses(t *testing.T) {
	for _, src := range []string{
		"x = \"abc\n\"\n",
		"x = 'abc",
		"x = [[abc",
		"x = [==[ abc ]=]",
		"--[[ abc",
		"x = 1\r\ny = 2\n",
		"x = ~y\n",
		"--[= c\n",
		"x = t[=1]\n",
		"x = 0x\n",
		"x = $\n",
		"f = [==[ x = \"unterminated ]==]\n", // code strings must lex as code
	} {
		if got, err := Minify(src); err == nil {
			t.Errorf("Minify(%q) = %q, want an error", src, got)
		}
	}
}

// TestMinifyShrinksScripts checks each script's shipped form: smaller, the
// same number of lines, no comment left.
func TestMinifyShrinksScripts(t *testing.T) {
	for _, s := range loadScripts(t) {
		full, err := Minify(s.Source)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(full, "\n") > strings.Count(s.Source, "\n") || len(full) >= len(s.Source)*3/4 {
			t.Errorf("%s: %d lines, %d bytes from %d lines, %d bytes", s.Dir, strings.Count(full, "\n"), len(full), strings.Count(s.Source, "\n"), len(s.Source))
		}
		out, err := s.Shipped()
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "--") {
				t.Errorf("%s: shipped line %d is indented or a comment: %q", s.Dir, n+1, line)
			}
		}
		t.Logf("%s: %d → %d bytes (%d with its fast path)", s.Dir, len(s.Source), len(full), len(out))
	}
}
