/* The README's example: links libtiny_cnn.so, classifies one seeded random image on the GPU and
   prints the class probabilities. Exit codes: 0 ok, 1 error, 3 no GPU / driver (library fine). */
#include <stdio.h>
#include <stdlib.h>

#include "tiny_cnn.h"

int main(void) {
  if (tiny_cnn_num_inputs() != 1 || tiny_cnn_num_outputs() != 1) {
    fprintf(stderr, "unexpected model signature\n");
    return 1;
  }
  unsigned long long in_bytes = tiny_cnn_input_bytes(0), out_bytes = tiny_cnn_output_bytes(0);
  float* image = malloc(in_bytes);
  float* probs = malloc(out_bytes);
  if (!image || !probs) return 1;
  unsigned state = 12345u; /* seeded: the same image every run */
  for (unsigned long long i = 0; i < in_bytes / sizeof(float); ++i) {
    state = state * 1664525u + 1013904223u;
    image[i] = (float)((state >> 8) & 0xffff) / 32768.0f - 1.0f;
  }

  tiny_cnn_model* model = NULL;
  int status = tiny_cnn_create(&model, 0, NULL, NULL);
  if (status != 0) {
    fprintf(stderr, "create failed (%d): %s\n", status, tiny_cnn_last_error(NULL));
    free(image);
    free(probs);
    return (status == 2 /* AOTC_ERROR_NO_DRIVER */) ? 3 : 1;
  }
  const void* inputs[1] = {image};
  void* outputs[1] = {probs};
  status = tiny_cnn_run_host(model, inputs, outputs);
  if (status != 0) {
    fprintf(stderr, "run failed (%d): %s\n", status, tiny_cnn_last_error(model));
    tiny_cnn_destroy(model);
    return 1;
  }
  int best = 0;
  float total = 0.0f;
  int classes = (int)(out_bytes / sizeof(float));
  for (int c = 0; c < classes; ++c) {
    printf("class %d: %.4f\n", c, probs[c]);
    total += probs[c];
    if (probs[c] > probs[best]) best = c;
  }
  printf("top class %d (probabilities sum to %.4f)\n", best, total);
  tiny_cnn_destroy(model);
  free(image);
  free(probs);
  return 0;
}
