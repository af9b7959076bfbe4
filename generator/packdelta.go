package generator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// Bounds of rebuilding one object from a pack (packReader).
const (
	// maxResolveBytes bounds the bytes inflated to rebuild the objects of
	// one commit: a delta chain through huge objects costs time, not memory.
	maxResolveBytes = 1 << 30
	// maxDeltaChain bounds the deltas one object is rebuilt through.
	maxDeltaChain = 10000
	// maxResolveSpans bounds the ranges tracked through the chains.
	maxResolveSpans = 16 << 20
)

// span is a range of an object to fill: dst receives bytes [off, off+len(dst)).
type span struct {
	off int64
	dst []byte
}

// postCopy fills bytes of the result from bytes of the result once those are filled.
type postCopy struct{ dst, src []byte }

// packReader rebuilds objects of a pack held on disk (a local pack file,
// or a fetched pack spooled as it streamed by) without holding any base in
// memory: a delta's copy instructions say which ranges of its base the
// result needs, and only those ranges are filled, through the whole chain,
// each base inflated as a stream and left as soon as the last range needed
// is read. Memory is the result and the ranges' bookkeeping, whatever the
// size of the bases.
type packReader struct {
	ra       io.ReaderAt
	size     int64                             // bytes of ra
	offsetOf func(plumbing.Hash) (int64, bool) // a reference delta's base
	inflated int64
	spans    int
}

// errResolveBound: rebuilding the object would pass a bound.
var errResolveBound = errors.New("over the bounds of rebuilding a packed object")

// read rebuilds the object at off, of size n (the caller read the size from
// its header), and returns it with its type.
func (p *packReader) read(off, n int64) ([]byte, plumbing.ObjectType, error) {
	out := make([]byte, n)
	t, err := p.fill(off, []span{{0, out}})
	return out, t, err
}

// fill fills spans of the object at off; it returns the object's type.
func (p *packReader) fill(off int64, spans []span) (plumbing.ObjectType, error) {
	var posts []postCopy
	var levels []int // where each level's post copies start
	defer func() {
		// A level's copies read what deeper levels filled, and each reads
		// what an earlier one of its level completed.
		for l := len(levels) - 1; l >= 0; l-- {
			end := len(posts)
			if l+1 < len(levels) {
				end = levels[l+1]
			}
			for _, c := range posts[levels[l]:end] {
				copy(c.dst, c.src)
			}
		}
	}()
	for depth := 0; ; depth++ {
		if depth > maxDeltaChain {
			return plumbing.InvalidObject, fmt.Errorf("a delta chain longer than %d: %w", maxDeltaChain, errResolveBound)
		}
		levels = append(levels, len(posts))
		spans, posts = disjoint(spans, posts)
		if p.spans += len(spans); p.spans > maxResolveSpans {
			return plumbing.InvalidObject, fmt.Errorf("more than %d ranges: %w", maxResolveSpans, errResolveBound)
		}
		sc := packfile.NewScanner(io.NewSectionReader(p.ra, 0, p.size))
		oh, err := sc.SeekObjectHeader(off)
		if err != nil {
			return plumbing.InvalidObject, fmt.Errorf("pack object at %d: %w", off, err)
		}
		rc, err := sc.ReadObject()
		if err != nil {
			return plumbing.InvalidObject, fmt.Errorf("pack object at %d: %w", off, err)
		}
		r := bufio.NewReader(&countingReader{r: rc, p: p})
		if !oh.Type.IsDelta() {
			err = fillWhole(r, oh.Length, spans)
			_ = rc.Close()
			return oh.Type, err
		}
		base := oh.OffsetReference
		if oh.Type == plumbing.REFDeltaObject {
			var ok bool
			if base, ok = p.offsetOf(oh.Reference); !ok {
				_ = rc.Close()
				return plumbing.InvalidObject, fmt.Errorf("the base %s of the delta at %d is not in the pack", oh.Reference, off)
			}
		}
		spans, err = deltaSpans(r, spans)
		_ = rc.Close()
		if err != nil {
			return plumbing.InvalidObject, fmt.Errorf("pack delta at %d: %w", off, err)
		}
		off = base
	}
}

type countingReader struct {
	r io.Reader
	p *packReader
}

func (c *countingReader) Read(b []byte) (int, error) {
	if c.p.inflated >= maxResolveBytes {
		return 0, fmt.Errorf("more than %d bytes inflated: %w", int64(maxResolveBytes), errResolveBound)
	}
	n, err := c.r.Read(b)
	c.p.inflated += int64(n)
	return n, err
}

// disjoint sorts spans and makes them disjoint: a range that an earlier
// span holds too becomes a copy from it, done once that one is filled.
func disjoint(spans []span, posts []postCopy) ([]span, []postCopy) {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
	out := spans[:0:0]
	var reach span // the span reaching furthest, whole
	end := int64(-1)
	for _, s := range spans {
		e := s.off + int64(len(s.dst))
		if s.off < end {
			n := min(e, end) - s.off
			at := s.off - reach.off
			posts = append(posts, postCopy{dst: s.dst[:n], src: reach.dst[at : at+n]})
			if e <= end {
				continue
			}
			out = append(out, span{off: end, dst: s.dst[n:]})
		} else if len(s.dst) > 0 {
			out = append(out, s)
		}
		if e > end {
			reach, end = s, e
		}
	}
	return out, posts
}

// fillWhole fills sorted disjoint spans of a whole object of size n from
// its stream, reading no further than the last.
func fillWhole(r io.Reader, n int64, spans []span) error {
	var pos int64
	for _, s := range spans {
		if s.off+int64(len(s.dst)) > n {
			return fmt.Errorf("a delta copies past the end of its %d-byte base", n)
		}
		if _, err := io.CopyN(io.Discard, r, s.off-pos); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, s.dst); err != nil {
			return err
		}
		pos = s.off + int64(len(s.dst))
	}
	return nil
}

// deltaSpans reads a delta's instructions from r: the parts of sorted
// disjoint spans of its result that it inserts are filled, and it returns
// the spans of its base that it copies into the rest.
func deltaSpans(r io.ByteReader, spans []span) ([]span, error) {
	baseSize, err := deltaVarint(r)
	if err != nil {
		return nil, err
	}
	size, err := deltaVarint(r)
	if err != nil {
		return nil, err
	}
	if n := len(spans); n > 0 && spans[n-1].off+int64(len(spans[n-1].dst)) > size {
		return nil, fmt.Errorf("its result is %d bytes, fewer than the object's", size)
	}
	var base []span
	var lit [0x7f]byte
	i := 0
	for t := int64(0); i < len(spans); {
		if t >= size {
			return nil, errors.New("its instructions end before its result")
		}
		cmd, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		var n, from int64
		switch {
		case cmd&0x80 != 0:
			var v [7]int64
			for b := 0; b < 7; b++ {
				if cmd&(1<<b) != 0 {
					c, err := r.ReadByte()
					if err != nil {
						return nil, err
					}
					v[b] = int64(c)
				}
			}
			from = v[0] | v[1]<<8 | v[2]<<16 | v[3]<<24
			if n = v[4] | v[5]<<8 | v[6]<<16; n == 0 {
				n = 0x10000
			}
			if from+n > baseSize {
				return nil, fmt.Errorf("it copies past the end of its %d-byte base", baseSize)
			}
		case cmd != 0:
			n = int64(cmd)
			if _, err := io.ReadFull(byteReader{r}, lit[:n]); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("an invalid instruction")
		}
		if t+n > size {
			return nil, errors.New("its instructions make more than its result")
		}
		for j := i; j < len(spans) && spans[j].off < t+n; j++ {
			s := spans[j]
			a, b := max(t, s.off), min(t+n, s.off+int64(len(s.dst)))
			if a >= b {
				continue
			}
			dst := s.dst[a-s.off : b-s.off]
			if cmd&0x80 != 0 {
				base = append(base, span{off: from + a - t, dst: dst})
			} else {
				copy(dst, lit[a-t:b-t])
			}
		}
		t += n
		for i < len(spans) && spans[i].off+int64(len(spans[i].dst)) <= t {
			i++
		}
	}
	return base, nil
}

// deltaVarint reads one of the two sizes a delta starts with.
func deltaVarint(r io.ByteReader) (int64, error) {
	var v int64
	for shift := uint(0); shift <= 56; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("a malformed delta size")
}

// byteReader reads an io.ByteReader as an io.Reader.
type byteReader struct{ r io.ByteReader }

func (b byteReader) Read(p []byte) (int, error) {
	for i := range p {
		c, err := b.r.ReadByte()
		if err != nil {
			return i, err
		}
		p[i] = c
	}
	return len(p), nil
}

// applyFrom rebuilds the result of delta (held in memory), whose base is
// the object at off.
func (p *packReader) applyFrom(delta []byte, off int64) ([]byte, plumbing.ObjectType, error) {
	n := deltaTargetSize(delta)
	if n < 0 {
		return nil, plumbing.InvalidObject, errors.New("a malformed delta")
	}
	out := make([]byte, n)
	base, err := deltaSpans(bytes.NewReader(delta), []span{{0, out}})
	if err != nil {
		return nil, plumbing.InvalidObject, err
	}
	t, err := p.fill(off, base)
	return out, t, err
}
