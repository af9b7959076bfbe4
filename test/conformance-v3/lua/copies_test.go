package lua

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sflua "github.com/spokeforge/spokeforge/lua"
)

// FuzzMinify seeds from the cases of package lua's TestMinify, which a test file cannot export.
// They are copied below as they are in lua/minify_test.go, and TestCopiesOfPackageLua fails when
// the copy differs from its original.

// copied names each declaration copied here and the file of package lua it comes from.
var copied = map[string]string{
	"minifyCases": "minify_test.go",
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
	bodies, err := sflua.CodeStrings(src)
	if err != nil {
		return false
	}
	for _, body := range bodies {
		if body != "" && strings.Contains(msg, body) {
			return true
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
