package quality

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// The base's distributions are cached in a compact form: for every scored
// row, the fewest most probable tokens that hold all but a tail of the
// probability (DefaultTail, 0.01%), at most K (id int32 and natural-log probability
// float32 each, most probable first), and the log-probability of the token
// that follows. A real model's row needs tens to hundreds of tokens: a few
// KB, against 513 KB a row for Llama 3's 128256 tokens as float32. The
// rest of the distribution, the tail, is kept only as its total mass (one
// minus the kept probabilities, summed from the logits directly).
//
// The error that costs: the KLD is computed exactly over the kept tokens
// with the tail taken as one outcome. By the log-sum inequality that is
// never more than the full KLD; what it leaves out is the tail's mass
// times the divergence of the two distributions within the tail, about
// the tail's mass T in relative terms (measured on the tiny model, whose
// flat distributions make the tail the largest: see the tests). T is at
// most the tail asked for unless a row hit K; its mean is reported (Figures.TailMass),
// and above 1% the KLD is flagged as a lower bound.
//
// On disk: "TBQC", a uint32 length and the JSON Key, then the rows chunk
// by chunk, little-endian, each row its count (uint32), ids, log-probs, tail
// mass (float64) and next token's log-prob. A cache is written to a temporary name and
// renamed once complete, so an interrupted evaluation leaves none.

// DefaultTail is the probability a cached row may leave out.
const DefaultTail = 0.0001

// An evaluation's defaults: the tokens scored at most, the chunk size, the
// base tokens a cached row keeps at most.
const (
	DefaultTokens = 4096
	DefaultCtx    = 512
	DefaultTopK   = 4096
)

// Key identifies a cache: the base's content, the tokens, the chunking
// and K.
type Key struct {
	Version    int     `json:"version"`
	BaseSHA256 string  `json:"base_sha256"`
	Tokens     string  `json:"tokens_sha256"`
	Ctx        int     `json:"ctx"`
	Chunks     int     `json:"chunks"`
	K          int     `json:"k"`
	Tail       float64 `json:"tail"`
	Vocab      int     `json:"vocab"`
}

const cacheVersion = 1

var magic = [4]byte{'T', 'B', 'Q', 'C'}

// NewKey is the key of the base file's rows over these chunks, each row
// keeping at most k tokens and leaving out at most tail.
func NewKey(baseSHA256 string, chunks [][]int32, k int, tail float64, vocab int) Key {
	h := sha256.New()
	for _, c := range chunks {
		binary.Write(h, binary.LittleEndian, c)
	}
	ctx := 0
	if len(chunks) > 0 {
		ctx = len(chunks[0])
	}
	return Key{Version: cacheVersion, BaseSHA256: baseSHA256, Tokens: hex.EncodeToString(h.Sum(nil)), Ctx: ctx, Chunks: len(chunks), K: k, Tail: tail, Vocab: vocab}
}

// Path is where the cache of key lives under dir.
func (k Key) Path(dir string) string {
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	return filepath.Join(dir, "quality", hex.EncodeToString(h[:12])+".tbq")
}

// cacheWriter writes a cache as the base is evaluated.
type cacheWriter struct {
	f    *os.File
	w    *bufio.Writer
	path string
	key  Key
}

// CreateCache starts the cache of key at path.
func CreateCache(path string, key Key) (*cacheWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("quality cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tbq-*")
	if err != nil {
		return nil, fmt.Errorf("quality cache: %w", err)
	}
	cw := &cacheWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), path: path, key: key}
	hdr, _ := json.Marshal(key)
	cw.w.Write(magic[:])
	binary.Write(cw.w, binary.LittleEndian, uint32(len(hdr)))
	cw.w.Write(hdr)
	return cw, nil
}

// Write appends rows: row r keeps n[r] tokens, from ids and logp[r*K],
// and leaves out tail[r] of the probability.
func (cw *cacheWriter) Write(n, ids []int32, logp []float32, tail []float64, next []float32) error {
	k := cw.key.K
	for r := range next {
		m := int(n[r])
		binary.Write(cw.w, binary.LittleEndian, uint32(m))
		binary.Write(cw.w, binary.LittleEndian, ids[r*k:r*k+m])
		binary.Write(cw.w, binary.LittleEndian, logp[r*k:r*k+m])
		binary.Write(cw.w, binary.LittleEndian, tail[r])
		if err := binary.Write(cw.w, binary.LittleEndian, next[r]); err != nil {
			return fmt.Errorf("quality cache: %w", err)
		}
	}
	return nil
}

// Commit finishes the cache and puts it in place.
func (cw *cacheWriter) Commit() error {
	err := cw.w.Flush()
	if err == nil {
		err = cw.f.Sync()
	}
	if cerr := cw.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(cw.f.Name(), cw.path)
	}
	if err != nil {
		os.Remove(cw.f.Name())
		return fmt.Errorf("quality cache %s: %w", cw.path, err)
	}
	return nil
}

// Abort drops an unfinished cache.
func (cw *cacheWriter) Abort() {
	cw.f.Close()
	os.Remove(cw.f.Name())
}

// cacheReader streams a cache's rows back, a chunk at a time.
type cacheReader struct {
	f   *os.File
	r   *bufio.Reader
	key Key
}

// ErrNoCache is a cache that is absent or made for another key.
var ErrNoCache = errors.New("no cache for these settings")

// OpenCache opens the cache at path, which must have been written for key.
func OpenCache(path string, key Key) (*cacheReader, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoCache
	}
	if err != nil {
		return nil, fmt.Errorf("quality cache: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var m [4]byte
	var n uint32
	var got Key
	if _, err := io.ReadFull(r, m[:]); err != nil || m != magic {
		f.Close()
		return nil, fmt.Errorf("quality cache %s is not a cache (remove it): %w", path, ErrNoCache)
	}
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > 1<<16 {
		f.Close()
		return nil, fmt.Errorf("quality cache %s: bad header (remove it): %w", path, ErrNoCache)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil || json.Unmarshal(hdr, &got) != nil || got != key {
		f.Close()
		return nil, fmt.Errorf("quality cache %s: made for other settings: %w", path, ErrNoCache)
	}
	return &cacheReader{f: f, r: r, key: key}, nil
}

// Read fills len(next) rows as Write took them.
func (cr *cacheReader) Read(n, ids []int32, logp []float32, tail []float64, next []float32) error {
	k := cr.key.K
	for r := range next {
		var m uint32
		err := binary.Read(cr.r, binary.LittleEndian, &m)
		if err == nil && (m < 1 || int(m) > k) {
			err = fmt.Errorf("a row of %d tokens, not 1 to %d", m, k)
		}
		if err == nil {
			n[r] = int32(m)
			err = binary.Read(cr.r, binary.LittleEndian, ids[r*k:r*k+int(m)])
		}
		if err == nil {
			err = binary.Read(cr.r, binary.LittleEndian, logp[r*k:r*k+int(m)])
		}
		if err == nil {
			err = binary.Read(cr.r, binary.LittleEndian, &tail[r])
		}
		if err == nil {
			err = binary.Read(cr.r, binary.LittleEndian, &next[r])
		}
		if err != nil {
			return fmt.Errorf("quality cache %s: cut short (remove it): %w", cr.f.Name(), err)
		}
		if err := cr.check(ids[r*k:r*k+int(m)], logp[r*k:r*k+int(m)], tail[r], next[r]); err != nil {
			return fmt.Errorf("quality cache %s: damaged (remove it; the next evaluation makes it again): %w", cr.f.Name(), err)
		}
	}
	return nil
}

// logpSlack is how far above 0 a stored log-probability may round.
const logpSlack = 1e-3

// check says what of a row read back cannot be the base's: a token
// outside the vocabulary, a log-probability that is not one, a tail mass
// outside [0, 1].
func (cr *cacheReader) check(ids []int32, logp []float32, tail float64, next float32) error {
	for i, id := range ids {
		if id < 0 || (cr.key.Vocab > 0 && int(id) >= cr.key.Vocab) {
			return fmt.Errorf("token id %d outside the vocabulary of %d", id, cr.key.Vocab)
		}
		if lp := float64(logp[i]); math.IsNaN(lp) || lp > logpSlack {
			return fmt.Errorf("log-probability %g of token %d is not one (at most 0)", lp, id)
		}
	}
	if math.IsNaN(tail) || tail < 0 || tail > 1 {
		return fmt.Errorf("tail mass %g outside 0 to 1", tail)
	}
	if n := float64(next); math.IsNaN(n) || n > logpSlack {
		return fmt.Errorf("the next token's log-probability %g is not one", n)
	}
	return nil
}

// Close closes the cache.
func (cr *cacheReader) Close() error { return cr.f.Close() }
