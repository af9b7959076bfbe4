package record

import (
	"fmt"
	"unicode/utf8"
)

// yamlReadErr is the YAML error of a file yaml.v3's reader refused before
// scanning (bad UTF-8, a NUL or another control character): yaml.v3 gives
// no position for those, so the first such byte is located here, by the
// reader's own rule (yaml.v3 readerc.go), for a message with file:line.
func yamlReadErr(file string, data []byte, err error) error {
	line, col, what, ok := firstUnreadable(data)
	if !ok {
		return Error{File: file, Msg: "invalid YAML: " + syntaxErrText(err)}
	}
	return Error{File: file, Line: line, Msg: fmt.Sprintf("invalid YAML: column %d: %s (YAML files are UTF-8 text)", col, what)}
}

// firstUnreadable finds the first byte yaml.v3's reader refuses: invalid
// UTF-8, or a character outside YAML's printable set (tab, LF, CR, NEL and
// the printable ranges). A UTF-16 file (a BOM) is left to yaml.v3.
func firstUnreadable(data []byte) (line, col int, what string, ok bool) {
	if len(data) >= 2 && (data[0] == 0xFE && data[1] == 0xFF || data[0] == 0xFF && data[1] == 0xFE) {
		return 0, 0, "", false
	}
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("byte 0x%02x is not UTF-8", data[i]), true
		case r == 0:
			return line, col, "a NUL byte", true
		case !yamlPrintable(r) && !(r == 0xFEFF && i == 0):
			return line, col, fmt.Sprintf("control character %U is not allowed", r), true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return 0, 0, "", false
}

func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}
