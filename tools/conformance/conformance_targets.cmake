# Targets of the conformance runner, in one file so that tools/conformance/CMakeLists.txt and
# tests/conformance/CMakeLists.txt (used until tools/ adds this folder) define them identically.
# aotc_conformance_core: model inspection, plus tensor comparison through aotc_compare.
# aotc_conformance_gpu: build a Graph into a .so and run it via dlopen (also used by tests/gpu).
if(NOT TARGET aotc_conformance_core)
  set(AOTC_CONF_DIR ${CMAKE_SOURCE_DIR}/tools/conformance)
  # Comparison: aotc_compare (tools/compare.cc, defined in tools/CMakeLists.txt; resolved by name).
  add_library(aotc_conformance_core STATIC ${AOTC_CONF_DIR}/model_info.cc)
  target_link_libraries(aotc_conformance_core PUBLIC aotc_ir aotc_compare onnx_proto protobuf::libprotobuf)

  if(TARGET aotc_frontend AND TARGET aotc_opt AND TARGET aotc_codegen)
    add_library(aotc_conformance_gpu STATIC ${AOTC_CONF_DIR}/gpu_exec.cc)
    target_link_libraries(aotc_conformance_gpu PUBLIC aotc_conformance_core aotc_opt aotc_codegen
                          aotc_ir ${CMAKE_DL_LIBS})
    add_executable(aotc-conformance ${AOTC_CONF_DIR}/main.cc ${AOTC_CONF_DIR}/runner.cc
                   ${AOTC_CONF_DIR}/report.cc)
    target_link_libraries(aotc-conformance PRIVATE aotc_conformance_gpu aotc_frontend)
    set_target_properties(aotc-conformance PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  else()
    message(WARNING "conformance: aotc_frontend/aotc_opt/aotc_codegen missing; not building aotc-conformance")
  endif()
endif()
