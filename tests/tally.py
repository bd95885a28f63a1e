"""The checks of a plain test script: each prints what failed; the tally
says how many passed and failed, and the script's exit status."""


class Tally:
    def __init__(self, prefix):
        self.prefix, self.passed, self.failed = prefix, 0, 0

    def __call__(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"{self.prefix}{what}")

    def end(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
