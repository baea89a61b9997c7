// Grafana's generated types spell some fields as TypeScript enums
// (ThresholdsMode, MappingType, DashboardCursorSync...), which a literal
// read from JSON can never be assigned to: Loose<T> turns each string enum
// into the union of its values and leaves the rest of T as it is, so the
// dashboard's JSON is checked field by field (names, types, required
// fields, excess properties) against Grafana's own definition.
export type Loose<T> =
  T extends string ? `${T}` :
  T extends number | boolean | null | undefined ? T :
  T extends ReadonlyArray<infer E> ? Array<Loose<E>> :
  T extends object ? { [K in keyof T]: Loose<T[K]> } :
  T;
