// Command gotypes prints, as JSON, how Go's encoding/json lays out the Kubernetes types a worker
// hash and a last-applied hash cover (pod templates, and the kinds SyncResource writes): for every struct reachable from the roots, its fields in
// declaration order (embedded inline structs flattened where they sit) with their JSON names and
// omitempty/omitzero options. dgd/domain/gojson reads the table; it is data about k8s.io/api, not
// code from it. With -encode it instead reads {"type": ..., "value": ...} lines on stdin, decodes
// each value into that Go type and prints Go's json.Marshal of it (the oracle of the unit tests);
// with -unstructured too, json.Marshal of runtime.DefaultUnstructuredConverter.ToUnstructured of it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var roots = map[string]reflect.Type{
	"PodTemplateSpec":       reflect.TypeOf(corev1.PodTemplateSpec{}),
	"ServiceSpec":           reflect.TypeOf(corev1.ServiceSpec{}),
	"Service":               reflect.TypeOf(corev1.Service{}),
	"ServiceAccount":        reflect.TypeOf(corev1.ServiceAccount{}),
	"ConfigMap":             reflect.TypeOf(corev1.ConfigMap{}),
	"Secret":                reflect.TypeOf(corev1.Secret{}),
	"PersistentVolumeClaim": reflect.TypeOf(corev1.PersistentVolumeClaim{}),
	"Role":                  reflect.TypeOf(rbacv1.Role{}),
	"RoleBinding":           reflect.TypeOf(rbacv1.RoleBinding{}),
	"Ingress":               reflect.TypeOf(networkingv1.Ingress{}),
	"Deployment":            reflect.TypeOf(appsv1.Deployment{}),
}

// leaves are types with their own MarshalJSON: named by kind, never walked.
var leaves = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):  "quantity",
	reflect.TypeOf(intstr.IntOrString{}): "intorstring",
	reflect.TypeOf(metav1.Time{}):        "time",
	reflect.TypeOf(metav1.MicroTime{}):   "time",
	reflect.TypeOf(metav1.FieldsV1{}):    "raw",
}

type field struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
}

func typeName(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), "k8s.io/") + "." + t.Name()
}

func ref(t reflect.Type, structs map[string][]field) string {
	if kind, ok := leaves[t]; ok {
		return kind
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "ptr:" + ref(t.Elem(), structs)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "list:" + ref(t.Elem(), structs)
	case reflect.Map:
		return "map:" + ref(t.Elem(), structs)
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Struct:
		name := typeName(t)
		if _, seen := structs[name]; !seen {
			structs[name] = nil
			structs[name] = fields(t, structs)
		}
		return "struct:" + name
	}
	panic(fmt.Sprintf("unsupported type %s", t))
}

func fields(t reflect.Type, structs map[string][]field) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, fields(f.Type, structs)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		entry := field{Name: name, Type: ref(f.Type, structs)}
		for _, option := range parts[1:] {
			entry.OmitEmpty = entry.OmitEmpty || option == "omitempty"
			entry.OmitZero = entry.OmitZero || option == "omitzero"
		}
		out = append(out, entry)
	}
	return out
}

func encode(unstructured bool) {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var line struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			panic(err)
		}
		value := reflect.New(roots[line.Type])
		if err := json.Unmarshal(line.Value, value.Interface()); err != nil {
			panic(err)
		}
		var written any = value.Interface()
		if unstructured {
			converted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(value.Interface())
			if err != nil {
				panic(err)
			}
			written = converted
		}
		out, err := json.Marshal(written)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(out))
	}
}

func main() {
	encodeMode := flag.Bool("encode", false, "encode {type, value} lines read on stdin")
	unstructuredMode := flag.Bool("unstructured", false, "with -encode: convert to unstructured first")
	flag.Parse()
	if *encodeMode {
		encode(*unstructuredMode)
		return
	}
	structs := map[string][]field{}
	rootRefs := map[string]string{}
	for name, t := range roots {
		rootRefs[name] = ref(t, structs)
	}
	names := make([]string, 0, len(structs))
	for name := range structs {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Println("{")
	for i, name := range names {
		encoded, _ := json.Marshal(structs[name])
		sep := ","
		if i == len(names)-1 {
			sep = ""
		}
		fmt.Printf("  %q: %s%s\n", name, encoded, sep)
	}
	fmt.Println("}")
}
