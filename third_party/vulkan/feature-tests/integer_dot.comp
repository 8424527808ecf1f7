#version 450
// Compiles only where glslc knows GL_EXT_integer_dot_product.
#extension GL_EXT_integer_dot_product : require
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { int r; };
void main() {
    r = dotPacked4x8EXT(1, 2);
}
