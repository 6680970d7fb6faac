"""The front doors: each turns a command line into work for msagpu.

``msagpu`` (the typer app, `msagpu`; its options `options`), MAFFT's
(`mafft`), FAMSA's (`famsa`) and Clustal Omega's (`clustalo`) command lines,
and ``--ensemble``'s options (`ensemble`). Importing this package imports
none of them (``--help`` and ``--version`` stay light).
"""
