package variants

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// modelType is what ReadConfig knows of one Hugging Face model_type: the
// defaults its configuration class has for the fields a config.json may
// leave out, and how its layers are laid out.
type modelType struct {
	// headDim: "derived" (always hidden_size/num_attention_heads: a
	// head_dim that says otherwise is refused), "free" (head_dim, when
	// given, is used as it is; hidden_size/num_attention_heads when not)
	// or "required" (head_dim must be given: the configuration class's
	// default is no function of the other sizes).
	headDim string
	// epsField is the norm's epsilon; layerNorm when it is a LayerNorm's.
	epsField  string
	layerNorm bool
	eps       float64 // the configuration class's default
	tied      bool    // tie_word_embeddings' default
	fusedQKV  bool    // q, k and v are one qkv_proj
	fusedUp   bool    // gate and up are one gate_up_proj
}

// modelTypes are the model_type values ReadConfig reads, with the
// defaults of transformers' configuration classes (Qwen2Config,
// LlamaConfig, MistralConfig, GemmaConfig, Gemma2Config, Phi3Config,
// PhiConfig) and the layer layouts of their modeling files.
var modelTypes = map[string]modelType{
	"qwen2":   {headDim: "derived", epsField: "rms_norm_eps", eps: 1e-6},
	"llama":   {headDim: "free", epsField: "rms_norm_eps", eps: 1e-6},
	"mistral": {headDim: "free", epsField: "rms_norm_eps", eps: 1e-6},
	"gemma":   {headDim: "required", epsField: "rms_norm_eps", eps: 1e-6, tied: true},
	"gemma2":  {headDim: "required", epsField: "rms_norm_eps", eps: 1e-6, tied: true},
	"phi3":    {headDim: "derived", epsField: "rms_norm_eps", eps: 1e-5, fusedQKV: true, fusedUp: true},
	"phi":     {headDim: "derived", epsField: "layer_norm_eps", layerNorm: true, eps: 1e-5},
}

// ModelTypes lists the model_type values ReadConfig reads, sorted.
func ModelTypes() []string {
	var out []string
	for k := range modelTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ReadConfig reads a Hugging Face config.json into a Preset at
// DefaultTokens rows and DefaultSeq: hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads and vocab_size (required);
// num_key_value_heads (default: the attention heads), head_dim (see
// modelType), rms_norm_eps or, for phi, layer_norm_eps, and
// tie_word_embeddings (defaults: the model type's). A null field is a
// field left out, as transformers reads it; fields ReadConfig does not
// use are ignored. Phi-3's fused qkv_proj and gate_up_proj set FusedQKV
// and FusedGateUp. The Name is _name_or_path, or the file's base name
// without .json.
//
// Every error names the file and the field: a file that is missing, a
// directory or not JSON; an unknown model_type (the error lists the known
// ones); a missing required field; a size that is not a positive integer;
// KV heads that do not divide the attention heads; a head_dim other than
// hidden_size/num_attention_heads where the model type derives it.
func ReadConfig(path string) (Preset, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		hint := ""
		if c := filepath.Join(path, "config.json"); fileExists(c) {
			hint = fmt.Sprintf(" (give its config file, %s)", c)
		}
		return Preset{}, fmt.Errorf("%s is a directory, want a Hugging Face config.json%s", path, hint)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Preset{}, fmt.Errorf("%s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	p, err := parseConfig(data, name)
	if err != nil {
		return Preset{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// fileExists reports whether path is a regular file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// configFields are a config's top-level fields, each as it was written.
type configFields map[string]json.RawMessage

// parseConfig reads a config's bytes; name is the Name when the config
// has no _name_or_path.
func parseConfig(data []byte, name string) (Preset, error) {
	var f configFields
	if err := json.Unmarshal(data, &f); err != nil {
		return Preset{}, jsonError(data, err)
	}
	if f == nil {
		return Preset{}, errors.New("not a Hugging Face config: the top level is null, want an object")
	}
	known := strings.Join(ModelTypes(), ", ")
	mt, ok, err := f.str("model_type")
	switch {
	case err != nil:
		return Preset{}, err
	case !ok:
		return Preset{}, fmt.Errorf("no model_type (model types tune reads: %s)", known)
	}
	t, ok := modelTypes[mt]
	if !ok {
		return Preset{}, fmt.Errorf("model_type %q is not one tune reads (model types: %s)", mt, known)
	}
	p := Preset{Name: name, Tokens: DefaultTokens, Seq: DefaultSeq,
		FusedQKV: t.fusedQKV, FusedGateUp: t.fusedUp}
	if n, ok, err := f.str("_name_or_path"); err != nil {
		return Preset{}, err
	} else if ok && n != "" {
		p.Name = n
	}
	required := []string{"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"}
	for i, dst := range []*int{&p.Hidden, &p.Intermediate, &p.Layers, &p.Heads, &p.Vocab} {
		v, ok, err := f.size(required[i])
		if err != nil {
			return Preset{}, err
		}
		if !ok {
			return Preset{}, fmt.Errorf("no %s (a %s config gives %s)", required[i], mt, strings.Join(required, ", "))
		}
		*dst = v
	}
	kv, ok, err := f.size("num_key_value_heads")
	switch {
	case err != nil:
		return Preset{}, err
	case !ok:
		kv = p.Heads
	case p.Heads%kv != 0:
		return Preset{}, fmt.Errorf("num_key_value_heads=%d does not divide num_attention_heads=%d", kv, p.Heads)
	}
	p.KVHeads = kv
	if p.HeadDim, err = t.headDimOf(f, mt, p.Hidden, p.Heads); err != nil {
		return Preset{}, err
	}
	eps, ok, err := f.positive(t.epsField)
	if err != nil {
		return Preset{}, err
	}
	if !ok {
		eps = t.eps
	}
	if t.layerNorm {
		p.LayerNormEps = eps
	} else {
		p.RMSNormEps = eps
	}
	tied, ok, err := f.boolean("tie_word_embeddings")
	if err != nil {
		return Preset{}, err
	}
	p.TiedEmbeddings = t.tied
	if ok {
		p.TiedEmbeddings = tied
	}
	return p, nil
}

// headDimOf is the head dim of a config of model type mt.
func (t modelType) headDimOf(f configFields, mt string, hidden, heads int) (int, error) {
	hd, given, err := f.size("head_dim")
	if err != nil {
		return 0, err
	}
	switch {
	case t.headDim == "required" && !given:
		return 0, fmt.Errorf("no head_dim (a %s model's head dim is its own size, not hidden_size/num_attention_heads)", mt)
	case given && t.headDim != "derived":
		return hd, nil
	case hidden%heads != 0:
		return 0, fmt.Errorf("hidden_size=%d is not a multiple of num_attention_heads=%d, and the head dim of a %s model is hidden_size/num_attention_heads", hidden, heads, mt)
	case given && hd != hidden/heads:
		return 0, fmt.Errorf("head_dim=%d, but a %s model's head dim is hidden_size/num_attention_heads = %d/%d = %d", hd, mt, hidden, heads, hidden/heads)
	}
	return hidden / heads, nil
}

// raw returns the field called name; a field that is absent or null is
// not there (ok false).
func (f configFields) raw(name string) (json.RawMessage, bool) {
	v, ok := f[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// str reads a string field.
func (f configFields) str(name string) (string, bool, error) {
	v, ok := f.raw(name)
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, fmt.Errorf("%s: want a string, got %s", name, v)
	}
	return s, true, nil
}

// size reads a size: a positive integer within int32, the range of the
// kernels' shapes.
func (f configFields) size(name string) (int, bool, error) {
	v, ok := f.raw(name)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s: want a positive integer, got %s", name, v)
	}
	return int(n), true, nil
}

// positive reads a positive finite number.
func (f configFields) positive(name string) (float64, bool, error) {
	v, ok := f.raw(name)
	if !ok {
		return 0, false, nil
	}
	var x float64
	if err := json.Unmarshal(v, &x); err != nil || x <= 0 {
		return 0, false, fmt.Errorf("%s: want a positive number, got %s", name, v)
	}
	return x, true, nil
}

// boolean reads true or false.
func (f configFields) boolean(name string) (bool, bool, error) {
	v, ok := f.raw(name)
	if !ok {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, false, fmt.Errorf("%s: want true or false, got %s", name, v)
	}
	return b, true, nil
}

// jsonError says where data stops being JSON, or that it is JSON but not
// an object.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("not JSON: line %d: %v", line, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("not a Hugging Face config: the top level is a JSON %s, want an object", te.Value)
	}
	return fmt.Errorf("not JSON: %v", err)
}
