package fleet

import (
	"errors"
	"regexp"
	"strings"
	"unicode"

	"github.com/tokbench/tokbench/point"
)

// A generated job file carries every value as data: none may hold a
// control character (a newline would end a #SBATCH line or a comment and
// start a command or a YAML document), a #SBATCH value no space (sbatch
// would split it), a Kubernetes name only what Kubernetes allows.

// plain says what is wrong with a value written into a job file.
func plain(flag, v string, spaces bool) error {
	for _, r := range v {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return point.Inputf("--%s %q holds a control character (a newline?): a job file cannot carry it", flag, v)
		}
		if !spaces && unicode.IsSpace(r) {
			return point.Inputf("--%s %q holds a space: an #SBATCH line cannot carry it", flag, v)
		}
	}
	return nil
}

// check is what all job files need of a Job.
func (j Job) check() error {
	errs := []error{plain("spec", j.Spec, true), plain("results", j.Results, true), plain("tokbench", j.Tokbench, true)}
	for _, a := range j.Args {
		errs = append(errs, plain("arg", a, true))
	}
	return errors.Join(errs...)
}

// Check says what of the job a Slurm script cannot carry.
func (s Slurm) Check() error {
	errs := []error{s.Job.check(), plain("name", s.Name, false)}
	if strings.Contains(s.Results, `"`) {
		// The #SBATCH --output line quotes a folder with spaces.
		errs = append(errs, point.Inputf("--results %q holds a double quote: an #SBATCH line cannot carry it", s.Results))
	}
	for _, o := range [][2]string{{"partition", s.Partition}, {"gres", s.Gres}, {"time", s.Time}} {
		errs = append(errs, plain(o[0], o[1], false))
	}
	return errors.Join(errs...)
}

// dnsLabel is Kubernetes' RFC 1123 label (names of Jobs, ConfigMaps and
// namespaces); dnsSubdomain its subdomain (a PersistentVolumeClaim's).
var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func k8sName(flag, v string, subdomain bool) error {
	re, most, what := dnsLabel, 63, "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63"
	if subdomain {
		re, most, what = dnsSubdomain, 253, "lowercase letters, digits, '-' and '.', at most 253"
	}
	if len(v) > most || !re.MatchString(v) {
		return point.Inputf("--%s %q is not a Kubernetes name: use %s", flag, v, what)
	}
	return nil
}

// Check says what of the job a Kubernetes manifest cannot carry.
func (k Kubernetes) Check() error {
	errs := []error{k.Job.check(), k8sName("name", k.Name, false), k8sName("claim", k.Claim, true), plain("image", k.Image, false)}
	if k.Namespace != "" {
		errs = append(errs, k8sName("namespace", k.Namespace, false))
	}
	if !strings.HasPrefix(k.Results, "/") {
		errs = append(errs, point.Inputf("--results %q: a volume's mount path must be absolute", k.Results))
	}
	return errors.Join(errs...)
}
