#version 450
// Compiles only where glslc knows GL_EXT_bfloat16.
#extension GL_EXT_bfloat16 : require
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float r; };
void main() {
    bfloat16_t b = bfloat16_t(r);
    r = float(b);
}
