package generator

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/repo"
)

var plot = flag.String("plot", "", "run the growth benchmarks and write their plot to this PNG (e.g. ../docs/generator-growth.png)")

// TestGrowthPlot measures how answer time and snapshot load grow from 100 to 10,000
// clusters and draws them on log-log axes: zones answer (blue), clusters answer (green),
// full snapshot load (red), the load of a commit changing one cluster record after the
// previous one (orange), encoding/json floor for the zones answer (grey). Only with -plot.
func TestGrowthPlot(t *testing.T) {
	if *plot == "" {
		t.Skip("run with -plot FILE")
	}
	series := []struct {
		name  string
		col   color.RGBA
		bench func(n int) func(*testing.B)
	}{
		{"zones", color.RGBA{40, 90, 200, 255}, func(n int) func(*testing.B) { return func(b *testing.B) { benchCalls(b, n, KindZones) } }},
		{"clusters", color.RGBA{30, 150, 60, 255}, func(n int) func(*testing.B) { return func(b *testing.B) { benchCalls(b, n, KindClusters) } }},
		{"load", color.RGBA{200, 40, 40, 255}, func(n int) func(*testing.B) {
			fsys := synthRepo(n)
			return func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					mustSnapshot(b, fsys, "bench")
				}
			}
		}},
		{"1 changed", color.RGBA{230, 140, 20, 255}, func(n int) func(*testing.B) {
			base := synthFiles(n)
			one := copyFiles(base)
			p := fmt.Sprintf("clusters/c%05d/cluster.yaml", n/2)
			one[p] = append(append([]byte(nil), one[p]...), "  # one record changed\n"...)
			commits := []func() *repo.MemFS{blobFS(base), blobFS(one)}
			return func(b *testing.B) {
				l := NewLoader(testSource)
				if _, errs := l.Load(commits[0](), "c0"); len(errs) > 0 {
					b.Fatal(errs)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					l.Load(commits[(i+1)%2](), "c")
				}
			}
		}},
		{"json floor", color.RGBA{130, 130, 130, 255}, func(n int) func(*testing.B) { return benchFloor(n) }},
	}
	ms := make([][]float64, len(series))
	for i, s := range series {
		for _, n := range scales {
			r := testing.Benchmark(s.bench(n))
			v := float64(r.NsPerOp()) / 1e6
			ms[i] = append(ms[i], v)
			t.Logf("%-8s clusters=%-6d %10.3f ms/op %s", s.name, n, v, r.MemString())
		}
	}
	const w, h, left, bottom, top, right = 640, 440, 60, 44, 40, 24
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ms {
		for _, v := range s {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	px := func(i int) int { return left + i*(w-left-right)/(len(scales)-1) }
	py := func(v float64) int {
		return h - bottom - int((math.Log10(v)-ylo)/(yhi-ylo)*float64(h-bottom-top))
	}
	black := color.RGBA{0, 0, 0, 255}
	light := color.RGBA{225, 225, 225, 255}
	for d := ylo; d <= yhi; d++ {
		y := py(math.Pow(10, d))
		line(img, left, y, w-right, y, light)
		drawText(img, 4, y-3, fmt.Sprintf("%g", math.Pow(10, d)), black)
	}
	line(img, left, top, left, h-bottom, black)
	line(img, left, h-bottom, w-right, h-bottom, black)
	for i, n := range scales {
		line(img, px(i), h-bottom, px(i), h-bottom+4, black)
		label := fmt.Sprint(n)
		x := px(i) - len(label)*4
		if x+len(label)*8 > w {
			x = w - len(label)*8
		}
		drawText(img, x, h-bottom+10, label, black)
	}
	drawText(img, left+4, top-14, "MS PER ANSWER OR LOAD (LOG)", black)
	drawText(img, w/2-60, h-12, "CLUSTERS (LOG)", black)
	for si, s := range series {
		for i := range scales {
			x, y := px(i), py(ms[si][i])
			if i > 0 {
				line(img, px(i-1), py(ms[si][i-1]), x, y, s.col)
			}
			for dx := -3; dx <= 3; dx++ {
				for dy := -3; dy <= 3; dy++ {
					img.Set(x+dx, y+dy, s.col)
				}
			}
		}
		lx, ly := left+20+si*115, top+8
		for dx := 0; dx < 10; dx++ {
			for dy := 0; dy < 10; dy++ {
				img.Set(lx+dx, ly+dy, s.col)
			}
		}
		drawText(img, lx+14, ly, strings.ToUpper(s.name), black)
	}
	f, err := os.Create(*plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

func benchFloor(n int) func(*testing.B) {
	return func(b *testing.B) {
		floorJSON(b, n)
	}
}

// line draws with Bresenham's algorithm.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		img.Set(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// glyphs is a 3x5 pixel font for the axis numbers and labels.
var glyphs = map[rune][5]string{
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"}, '3': {"###", "..#", "###", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"}, '7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "###"},
	'.': {"...", "...", "...", "...", ".#."}, 'e': {"...", "###", "#.#", "##.", "###"},
	'-': {"...", "...", "###", "...", "..."}, '+': {"...", ".#.", "###", ".#.", "..."},
	' ': {"...", "...", "...", "...", "..."}, '(': {".#.", "#..", "#..", "#..", ".#."}, ')': {".#.", "..#", "..#", "..#", ".#."},
	'Z': {"###", "..#", ".#.", "#..", "###"}, 'O': {"###", "#.#", "#.#", "#.#", "###"},
	'N': {"##.", "#.#", "#.#", "#.#", "#.#"}, 'E': {"###", "#..", "##.", "#..", "###"},
	'S': {"###", "#..", "###", "..#", "###"}, 'C': {"###", "#..", "#..", "#..", "###"},
	'L': {"#..", "#..", "#..", "#..", "###"}, 'U': {"#.#", "#.#", "#.#", "#.#", "###"},
	'T': {"###", ".#.", ".#.", ".#.", ".#."}, 'R': {"##.", "#.#", "##.", "#.#", "#.#"},
	'A': {".#.", "#.#", "###", "#.#", "#.#"}, 'D': {"##.", "#.#", "#.#", "#.#", "##."},
	'F': {"###", "#..", "##.", "#..", "#.."}, 'M': {"#.#", "###", "###", "#.#", "#.#"},
	'P': {"###", "#.#", "###", "#..", "#.."}, 'G': {"###", "#..", "#.#", "#.#", "###"},
	'J': {"..#", "..#", "..#", "#.#", "###"}, 'W': {"#.#", "#.#", "###", "###", "#.#"},
	'H': {"#.#", "#.#", "###", "#.#", "#.#"}, 'I': {"###", ".#.", ".#.", ".#.", "###"},
}

// drawText draws s at twice the glyph size.
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g := glyphs[r]
		for gy, row := range g {
			for gx, p := range row {
				if p == '#' {
					for k := 0; k < 4; k++ {
						img.Set(x+gx*2+k%2, y+gy*2+k/2, c)
					}
				}
			}
		}
		x += 8
	}
}
