/* The entry points of libr3kokkos.so that other r3 code calls: the Kokkos Tools callbacks
 * (Kokkos_Profiling_C_Interface.h gives their types) and the current label for recorders. */
#ifndef R3_KOKKOS_CONNECTOR_H
#define R3_KOKKOS_CONNECTOR_H

#include <impl/Kokkos_Profiling_C_Interface.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The Kokkos label of the parallel region the calling thread is launching, or NULL. */
const char* r3_kokkos_current_label(void);

/* The candidate sets of the integer tuning variables declared so far that belong to the kernel
 * `label` (named "<label>_<name>", as Kokkos' tuners name them), as "name=v1,v2;name=v1" (see
 * r3::capture::parse_kokkos_choices), or NULL when there is none. The text stays valid on the
 * calling thread until its next call. */
const char* r3_kokkos_choices(const char* label);

void kokkosp_declare_output_type(const char* name, const size_t id,
                                 struct Kokkos_Tools_VariableInfo* info);
void kokkosp_declare_input_type(const char* name, const size_t id,
                                struct Kokkos_Tools_VariableInfo* info);
void kokkosp_request_values(const size_t context, const size_t n_inputs,
                            const struct Kokkos_Tools_VariableValue* inputs,
                            const size_t n_outputs, struct Kokkos_Tools_VariableValue* outputs);
void kokkosp_begin_context(const size_t context);
void kokkosp_end_context(const size_t context, struct Kokkos_Tools_VariableValue value);

#ifdef __cplusplus
}
#endif

#endif
