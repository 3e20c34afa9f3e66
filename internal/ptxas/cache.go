package ptxas

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The result cache keeps what ptxas said of a module (Result: reports, warnings, or its
// rejection), never the cubin, in one JSON file per module and architecture:
//
//	<cache>/<key[:2]>/<key>.json, key = SHA-256 of (format, ptxas --version, arch, PTX)
//
// so a result is reused only for the same text, target and ptxas build. A file is written
// under a temporary name and renamed into place, so test processes that share the folder read
// either a whole entry or none; an entry that does not parse or names another key is a miss.
// Errors other than a rejection (a ptxas that could not run, a canceled context) are not kept.

// EnvResultCache set to "off" turns the result cache of ForTests off.
const EnvResultCache = "GRADTUNE_PTXAS_CACHE"

// cacheFormat changes whenever what an entry holds or how ptxas is run changes.
const cacheFormat = "gradtune ptxas result 1: ptxas -v -arch=ARCH"

// DefaultCache is the result cache's folder: ptxas-results under $GRADTUNE_CACHE, else under
// <repo>/.cache; "" (no cache) when $GRADTUNE_PTXAS_CACHE is "off" or no repository is found.
func DefaultCache() string {
	if os.Getenv(EnvResultCache) == "off" {
		return ""
	}
	if c := os.Getenv(EnvCache); c != "" {
		return filepath.Join(c, "ptxas-results")
	}
	repo, err := repoRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(repo, ".cache", "ptxas-results")
}

// entry is one cached result.
type entry struct {
	Key      string
	Reports  []Report
	Warnings []string
	Failure  *Failure
}

func cacheKey(version string, m Module) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cacheFormat, version, m.Arch)
	h.Write([]byte(m.PTX))
	return hex.EncodeToString(h.Sum(nil))
}

func (a Assembler) entryPath(key string) string {
	return filepath.Join(a.Cache, key[:2], key+".json")
}

// load returns the cached result of key, if the cache holds it.
func (a Assembler) load(key string) (Result, bool) {
	if a.Cache == "" {
		return Result{}, false
	}
	data, err := os.ReadFile(a.entryPath(key))
	if err != nil {
		return Result{}, false
	}
	var e entry
	if json.Unmarshal(data, &e) != nil || e.Key != key {
		return Result{}, false
	}
	r := Result{Reports: e.Reports, Warnings: e.Warnings, Cached: true}
	if e.Failure != nil {
		r.Err = e.Failure
	}
	return r, true
}

// store keeps r as the result of key, when it is ptxas' own verdict. A cache that cannot be
// written is skipped: it only saves time.
func (a Assembler) store(key string, r Result) {
	var f *Failure
	if a.Cache == "" || r.Err != nil && !errors.As(r.Err, &f) {
		return
	}
	data, err := json.Marshal(entry{Key: key, Reports: r.Reports, Warnings: r.Warnings, Failure: f})
	if err != nil {
		return
	}
	p := a.entryPath(key)
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}

var versions sync.Map // ptxas path → versionResult

type versionResult struct {
	text string
	err  error
}

// versionOf returns what `ptxas --version` prints, asked once per path.
func versionOf(path string) (string, error) {
	if v, ok := versions.Load(path); ok {
		return v.(versionResult).text, v.(versionResult).err
	}
	if path == "" {
		return "", fmt.Errorf("ptxas: no ptxas path given")
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	v := versionResult{text: strings.TrimSpace(string(out))}
	if err != nil {
		v.err = fmt.Errorf("ptxas --version (%s): %w: %s", path, err, v.text)
	}
	versions.Store(path, v)
	return v.text, v.err
}
