"""Reading kernel reports: a console log or a pasted one, turned into titled reports."""
