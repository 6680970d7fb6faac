"""What a run is asked and what each family gets: the choices' vocabulary as
light enums (`choices`), every knob of a run frozen and validated (`config`),
and the rules that turn a family and the run's settings into its recipe
(`recipe`). Importing this package imports none of them (the alphabet and the
types stand on `choices` alone)."""
