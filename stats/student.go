package stats

import "math"

// StudentCDF is P(T <= t) for Student's t with df degrees of freedom
// (df <= 0 or infinite: the standard normal).
func StudentCDF(t, df float64) float64 {
	if df <= 0 || math.IsInf(df, 1) || df > 1e7 {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	// P(|T| > |t|) is the regularized incomplete beta I_x(df/2, 1/2).
	tail := 0.5 * incBeta(df/2, 0.5, df/(df+t*t))
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// StudentQuantile is the t with StudentCDF(t, df) = p (0 < p < 1).
func StudentQuantile(p, df float64) float64 {
	if df <= 0 || math.IsInf(df, 1) || df > 1e7 {
		return normalQuantile(p)
	}
	lo, hi := -1e3, 1e3
	for range 200 {
		mid := (lo + hi) / 2
		if StudentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// incBeta is the regularized incomplete beta function I_x(a, b), from its
// continued fraction (evaluated with the modified Lentz method).
func incBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	case x > (a+1)/(a+b+2):
		return 1 - incBeta(b, a, 1-x) // the fraction converges fast on this side
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab-la-lb+a*math.Log(x)+b*math.Log(1-x)) / a
	const tiny = 1e-300
	f, c, d := 1.0, 1.0, 0.0
	for i := 0; i <= 400; i++ {
		m := float64(i / 2)
		var num float64
		switch {
		case i == 0:
			num = 1
		case i%2 == 0:
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		default:
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		f *= c * d
		if math.Abs(1-c*d) < 1e-14 {
			break
		}
	}
	return front * (f - 1)
}
