"""krepro's tab-separated tables (scripts/arches.tsv, scripts/branches.tsv),
which the shell scripts read too (common.sh table_field): a header line
"#<first column>\t...", one row a line, "-" for empty."""


def load(path, first):
    rows, header = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(f"#{first}\t"):
                header = line[1:].split("\t")
                continue
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None or len(cols) != len(header):
                raise ValueError(f"{path}: row {cols[0]!r} does not fit the #{first} header")
            rows[cols[0]] = {k: ("" if v == "-" else v) for k, v in zip(header, cols)}
    return rows
