# Targets of the whole-model checker, in one file so that tools/model_check/CMakeLists.txt and
# tests/models/CMakeLists.txt (used until tools/CMakeLists.txt adds this folder) define them
# identically. aotc_model_check: the library (tests link it); aotc-model-check: the CLI.
if(NOT TARGET aotc_model_check AND TARGET aotc_frontend AND TARGET aotc_opt AND TARGET aotc_cli)
  set(AOTC_MODEL_CHECK_DIR ${CMAKE_SOURCE_DIR}/tools/model_check)
  add_library(aotc_model_check STATIC ${AOTC_MODEL_CHECK_DIR}/model_check.cc)
  target_link_libraries(aotc_model_check PUBLIC aotc_calib_io aotc_frontend aotc_opt aotc_cli aotc_ir)
  add_executable(aotc-model-check ${AOTC_MODEL_CHECK_DIR}/main.cc)
  target_link_libraries(aotc-model-check PRIVATE aotc_model_check)
  set_target_properties(aotc-model-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
