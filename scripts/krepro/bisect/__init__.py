"""krepro bisect: a bisection driven by krepro's rows."""
