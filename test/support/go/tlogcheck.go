// tlogcheck: an independent check of a topwagers results log with the Go checksum database's packages
// (golang.org/x/mod/sumdb/note and tlog, Debian's golang-golang-x-mod-dev), used by the tests. It reads the log as
// any client would, from its C2SP tlog-tiles URL (http://…/log) or a copy of it in a directory, and trusts only the
// verifier key it is given.
//
//	tlogcheck log <base> <vkey>                     the checkpoint's signature; the tree's root from the tiles; every
//	                                                entry's leaf hash in the level-0 tiles and its inclusion proof;
//	                                                every tile byte for byte as tlog makes it from the entries; then
//	                                                prints {"size","root"} and one {"index","entry"} line per entry
//	tlogcheck consistency <base> <vkey> <old-note>  the old checkpoint (a file) is a prefix of the current one
//	tlogcheck inclusion <vkey> <answer.json>        an answer's "log" member: its checkpoint's signature and the
//	                                                inclusion proof of its entry
//
// Exit status 1, with the reason on stderr, when anything does not check.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// fetch reads one resource of the log under base (a URL or a directory).
func fetch(base, path string) ([]byte, error) {
	if strings.HasPrefix(base, "http://") || strings.HasPrefix(base, "https://") {
		resp, err := http.Get(strings.TrimSuffix(base, "/") + "/" + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", path, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	return os.ReadFile(filepath.Join(base, filepath.FromSlash(path)))
}

// c2spPath is tlog's tile path in the C2SP layout: no height element, "entries" for "data".
func c2spPath(t tlog.Tile) string {
	p := t.Path()
	p = strings.Replace(p, fmt.Sprintf("tile/%d/data/", height), "tile/entries/", 1)
	return strings.Replace(p, fmt.Sprintf("tile/%d/", height), "tile/", 1)
}

// tiles reads tiles for tlog.TileHashReader, which checks each against the tree it was given; a tile read once
// is kept for the next proof.
type tiles struct {
	base string
	read map[string][]byte
}

func (r tiles) Height() int                     { return height }
func (r tiles) SaveTiles([]tlog.Tile, [][]byte) {}
func (r tiles) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		path := c2spPath(t)
		data, ok := r.read[path]
		if !ok {
			var err error
			if data, err = fetch(r.base, path); err != nil {
				return nil, err
			}
			r.read[path] = data
		}
		out[i] = data
	}
	return out, nil
}

// checkpoint opens a signed checkpoint with the verifier key and reads its tree.
func checkpoint(msg []byte, vkey string) (tlog.Tree, string) {
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		fail("checkpoint: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 || lines[0] != verifier.Name() {
		fail("checkpoint: not a checkpoint of %s", verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		fail("checkpoint: tree size %q", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		fail("checkpoint: root %q", lines[2])
	}
	return tlog.Tree{N: size, Hash: root}, lines[0]
}

// bundle splits an entry bundle into its uint16-length-prefixed entries.
func bundle(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			return nil, errors.New("truncated length")
		}
		n := int(data[0])<<8 | int(data[1])
		if len(data) < 2+n {
			return nil, errors.New("truncated entry")
		}
		out = append(out, data[2:2+n])
		data = data[2+n:]
	}
	return out, nil
}

func checkLog(base, vkey string) {
	msg, err := fetch(base, "checkpoint")
	if err != nil {
		fail("%v", err)
	}
	tree, _ := checkpoint(msg, vkey)
	thr := tlog.TileHashReader(tree, tiles{base, map[string][]byte{}})
	if th, err := tlog.TreeHash(tree.N, thr); err != nil || th != tree.Hash {
		fail("tree of %d: the tiles give %v (%v), the checkpoint %v", tree.N, th, err, tree.Hash)
	}
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]interface{}{"size": tree.N, "root": tree.Hash.String()})
	var own []tlog.Hash // tlog's own stored hashes, from the entries alone
	ownReader := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		hs := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			hs[i] = own[x]
		}
		return hs, nil
	})
	for start := int64(0); start < tree.N; start += 1 << height {
		w := tree.N - start
		if w > 1<<height {
			w = 1 << height
		}
		t := tlog.Tile{H: height, L: -1, N: start >> height, W: int(w)}
		data, err := fetch(base, c2spPath(t))
		if err != nil {
			fail("%v", err)
		}
		entries, err := bundle(data)
		if err != nil || int64(len(entries)) != w {
			fail("entry bundle %s: %d entries (%v), want %d", c2spPath(t), len(entries), err, w)
		}
		for i, entry := range entries {
			index := start + int64(i)
			// x/mod 0.7.0's TileHashReader does not authenticate every tile it reads (a tile after several subtrees
			// of one tile is skipped), so each hash read is also proved against the checkpoint below.
			leaf, err := thr.ReadHashes([]int64{tlog.StoredHashIndex(0, index)})
			if err != nil || leaf[0] != tlog.RecordHash(entry) {
				fail("entry %d: not the leaf hash of the tiles (%v)", index, err)
			}
			proof, err := tlog.ProveRecord(tree.N, index, thr)
			if err != nil || tlog.CheckRecord(proof, tree.N, tree.Hash, index, tlog.RecordHash(entry)) != nil {
				fail("entry %d: its inclusion proof does not check (%v)", index, err)
			}
			hashes, err := tlog.StoredHashes(index, entry, ownReader)
			if err != nil {
				fail("%v", err)
			}
			own = append(own, hashes...)
			out.Encode(map[string]interface{}{"index": index, "entry": string(entry)})
		}
	}
	if th, err := tlog.TreeHash(tree.N, ownReader); err != nil || th != tree.Hash {
		fail("tlog's own tree of the entries has root %v, the checkpoint %v", th, tree.Hash)
	}
	// NewTiles lists every width of a partial tile up to the current one; a log serves the current one.
	widest := map[[2]int64]int{}
	for _, t := range tlog.NewTiles(height, 0, tree.N) {
		if key := [2]int64{int64(t.L), t.N}; t.W > widest[key] {
			widest[key] = t.W
		}
	}
	for _, t := range tlog.NewTiles(height, 0, tree.N) {
		if t.W != widest[[2]int64{int64(t.L), t.N}] {
			continue
		}
		want, err := tlog.ReadTileData(t, ownReader)
		if err != nil {
			fail("%v", err)
		}
		served, err := fetch(base, c2spPath(t))
		if err != nil || !bytes.Equal(served, want) {
			fail("tile %s differs from tlog's (%v)", c2spPath(t), err)
		}
	}
}

func checkConsistency(base, vkey, oldFile string) {
	oldMsg, err := os.ReadFile(oldFile)
	if err != nil {
		fail("%v", err)
	}
	old, _ := checkpoint(oldMsg, vkey)
	msg, err := fetch(base, "checkpoint")
	if err != nil {
		fail("%v", err)
	}
	tree, _ := checkpoint(msg, vkey)
	if old.N > tree.N {
		fail("the log shrank from %d to %d", old.N, tree.N)
	}
	thr := tlog.TileHashReader(tree, tiles{base, map[string][]byte{}})
	proof, err := tlog.ProveTree(tree.N, old.N, thr)
	if err != nil {
		fail("consistency proof: %v", err)
	}
	if err := tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		fail("checkpoint %d is not a prefix of %d: %v", old.N, tree.N, err)
	}
	fmt.Printf("consistent %d -> %d\n", old.N, tree.N)
}

func checkInclusion(vkey, answerFile string) {
	data, err := os.ReadFile(answerFile)
	if err != nil {
		fail("%v", err)
	}
	var answer struct {
		Log struct {
			Index      int64    `json:"index"`
			Entry      string   `json:"entry"`
			Checkpoint string   `json:"checkpoint"`
			Proof      []string `json:"proof"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		fail("%v", err)
	}
	tree, origin := checkpoint([]byte(answer.Log.Checkpoint), vkey)
	var proof tlog.RecordProof
	for _, p := range answer.Log.Proof {
		raw, err := base64.StdEncoding.DecodeString(p)
		if err != nil || len(raw) != tlog.HashSize {
			fail("proof hash %q", p)
		}
		var h tlog.Hash
		copy(h[:], raw)
		proof = append(proof, h)
	}
	leaf := tlog.RecordHash([]byte(answer.Log.Entry))
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, answer.Log.Index, leaf); err != nil {
		fail("entry %d is not in the tree of %d: %v", answer.Log.Index, tree.N, err)
	}
	fmt.Printf("entry %d of %d in %s\n", answer.Log.Index, tree.N, origin)
}

func main() {
	args := os.Args[1:]
	switch {
	case len(args) == 3 && args[0] == "log":
		checkLog(args[1], args[2])
	case len(args) == 4 && args[0] == "consistency":
		checkConsistency(args[1], args[2], args[3])
	case len(args) == 3 && args[0] == "inclusion":
		checkInclusion(args[1], args[2])
	default:
		fail("usage: tlogcheck log <base> <vkey> | consistency <base> <vkey> <old-note> | inclusion <vkey> <answer.json>")
	}
}
