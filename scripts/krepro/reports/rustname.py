"""Rust's v0 mangled symbols ("_RNvMs3_NtCs..._11rust_binder7processNtB5_7Process10update_ref")
as the path they name ("<rust_binder::process::Process>::update_ref"), the way a
syzkaller title shows a Rust frame: crate hashes, disambiguators and generic
arguments left out. Written from the v0 grammar (the Rust reference's
"v0 Symbol Format"); a symbol it cannot read is returned unchanged.
"""
import string

BASE62 = string.digits + string.ascii_lowercase + string.ascii_uppercase
BASIC = {"a": "i8", "b": "bool", "c": "char", "d": "f64", "e": "str", "f": "f32", "h": "u8",
         "i": "isize", "j": "usize", "l": "i32", "m": "u32", "n": "i128", "o": "u128",
         "s": "i16", "t": "u16", "u": "()", "v": "...", "x": "i64", "y": "u64", "z": "!",
         "p": "_"}
MAX_DEPTH = 64


class Unreadable(Exception):
    pass


class Reader:
    def __init__(self, text):
        self.s, self.i, self.depth = text, 0, 0

    def peek(self):
        return self.s[self.i] if self.i < len(self.s) else ""

    def take(self):
        c = self.peek()
        if not c:
            raise Unreadable
        self.i += 1
        return c

    def base62(self):
        """A base-62 number ended by "_": "_" is 0, "N_" is N + 1."""
        if self.peek() == "_":
            self.i += 1
            return 0
        n = 0
        while (c := self.take()) != "_":
            if c not in BASE62:
                raise Unreadable
            n = n * 62 + BASE62.index(c)
        return n + 1

    def optional_disambiguator(self):
        if self.peek() == "s":
            self.i += 1
            self.base62()

    def ident(self):
        self.optional_disambiguator()
        if self.peek() == "u":
            raise Unreadable   # Punycode: not in kernel names
        digits = ""
        while self.peek().isdigit():
            digits += self.take()
        if not digits:
            raise Unreadable
        if self.peek() == "_":
            self.i += 1
        n = int(digits)
        name, self.i = self.s[self.i:self.i + n], self.i + n
        return name

    def backref(self, parse):
        pos = self.base62()
        if pos >= self.i or self.depth > MAX_DEPTH:
            raise Unreadable
        here, self.i = self.i, pos
        self.depth += 1
        try:
            return parse()
        finally:
            self.i, self.depth = here, self.depth - 1

    def path(self):
        c = self.take()
        if c == "C":
            return self.ident()
        if c == "N":
            ns, parent = self.take(), self.path()
            name = self.ident()
            return f"{parent}::{name}" if ns.islower() else f"{parent}::{{{ns.lower()}}}"
        if c == "M":
            self.optional_disambiguator()
            self.path()
            return f"<{self.type()}>"
        if c in "XY":
            if c == "X":
                self.optional_disambiguator()
                self.path()
            t = self.type()
            return f"<{t} as {self.path()}>"
        if c == "I":
            p = self.path()
            while self.peek() != "E":
                self.generic_arg()
            self.i += 1
            return p
        if c == "B":
            return self.backref(self.path)
        raise Unreadable

    def generic_arg(self):
        if self.peek() == "L":
            self.i += 1
            self.base62()
        elif self.peek() == "K":
            raise Unreadable   # const generics: not in the frames titles use
        else:
            self.type()

    def type(self):
        c = self.peek()
        if c in BASIC:
            self.i += 1
            return BASIC[c]
        if c in "RQ":
            self.i += 1
            if self.peek() == "L":
                self.i += 1
                self.base62()
            return ("&" if c == "R" else "&mut ") + self.type()
        if c in "PO":
            self.i += 1
            return ("*const " if c == "P" else "*mut ") + self.type()
        if c == "S":
            self.i += 1
            return f"[{self.type()}]"
        if c == "T":
            self.i += 1
            parts = []
            while self.peek() != "E":
                parts.append(self.type())
            self.i += 1
            return f"({', '.join(parts)})"
        if c == "B":
            self.i += 1
            return self.backref(self.type)
        return self.path()


def demangle(symbol):
    """The path a "_R" symbol names, or the symbol itself."""
    if not symbol.startswith("_R"):
        return symbol
    r = Reader(symbol[2:])
    try:
        return r.path()
    except (Unreadable, IndexError, ValueError, RecursionError):
        return symbol
