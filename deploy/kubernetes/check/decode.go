// Package check decodes hloserve's Kubernetes and KServe manifests into the real API types, as
// strictly as the API server's fieldValidation=Strict: an unknown field, a field in the wrong case,
// a duplicate key or an unknown kind is an error, so a typo fails the tests instead of being
// silently dropped by the cluster.
package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	servingv1alpha1 "github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	servingv1beta1 "github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Object is one decoded manifest document.
type Object struct {
	// Source is "file.yaml#N", N counting the file's documents from 1.
	Source string
	Kind   metav1.TypeMeta
	Value  any
}

// kinds maps apiVersion/kind to a constructor of the API type the document must decode into.
var kinds = map[string]func() any{
	"v1/ConfigMap":                               func() any { return &corev1.ConfigMap{} },
	"v1/Service":                                 func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim":                   func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":                         func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                        func() any { return &appsv1.StatefulSet{} },
	"serving.kserve.io/v1alpha1/ServingRuntime":  func() any { return &servingv1alpha1.ServingRuntime{} },
	"serving.kserve.io/v1beta1/InferenceService": func() any { return &servingv1beta1.InferenceService{} },
}

// DecodeFile decodes every document of a multi-document YAML file.
func DecodeFile(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode decodes every non-empty document of data; name labels the errors.
func Decode(name string, data []byte) ([]Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Object
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", name, n, err)
		}
		source := fmt.Sprintf("%s#%d", name, n)
		obj, empty, err := decodeDocument(source, doc)
		if err != nil {
			return nil, err
		}
		if !empty {
			out = append(out, obj)
		}
	}
}

func decodeDocument(source string, doc []byte) (Object, bool, error) {
	// YAMLToJSONStrict refuses duplicate keys, which plain YAML decoding resolves silently.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return Object{}, false, fmt.Errorf("%s: %w", source, err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return Object{}, true, nil // a comment-only document
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return Object{}, false, fmt.Errorf("%s: %w", source, err)
	}
	key := tm.APIVersion + "/" + tm.Kind
	newValue, ok := kinds[key]
	if !ok {
		return Object{}, false, fmt.Errorf("%s: unknown kind %q (apiVersion %q): only %s are checked", source, tm.Kind, tm.APIVersion, knownKinds())
	}
	value := newValue()
	// Case-sensitive, unknown and duplicate fields refused: what the API server does with
	// fieldValidation=Strict (encoding/json alone would accept "ContainerPort" for containerPort).
	strict, err := kjson.UnmarshalStrict(js, value, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return Object{}, false, fmt.Errorf("%s (%s): %w", source, key, err)
	}
	if len(strict) > 0 {
		return Object{}, false, fmt.Errorf("%s (%s): %w", source, key, errors.Join(strict...))
	}
	return Object{Source: source, Kind: tm, Value: value}, false, nil
}

func knownKinds() string {
	s := ""
	for _, k := range sortedKeys(kinds) {
		if s != "" {
			s += ", "
		}
		s += k
	}
	return s
}
