/* libtiff's LERC codec calls these three functions of libLerc. Debian's
 * libLerc.a is C++ built for executables only (it refers to libstdc++'s type
 * information PC-relatively) and cannot be linked into libvigil.so, so these
 * stand-ins fail: a LERC-compressed TIFF (rare: ESRI's raster format) is
 * refused with libtiff's error message; every other TIFF compression works.
 * The signatures are those of Lerc_c_api.h (lerc_status is unsigned int). */
#include <Lerc_c_api.h>

#define VIGIL_LERC_FAILED 1 /* LercNS::ErrCode::Failed */

lerc_status lerc_getBlobInfo(const unsigned char* blob, unsigned int size, unsigned int* info, double* ranges,
                             int info_size, int range_size) {
  (void)blob, (void)size, (void)info, (void)ranges, (void)info_size, (void)range_size;
  return VIGIL_LERC_FAILED;
}

lerc_status lerc_decode(const unsigned char* blob, unsigned int size, int masks, unsigned char* valid, int dim,
                        int cols, int rows, int bands, unsigned int type, void* data) {
  (void)blob, (void)size, (void)masks, (void)valid, (void)dim, (void)cols, (void)rows, (void)bands, (void)type,
      (void)data;
  return VIGIL_LERC_FAILED;
}

lerc_status lerc_encodeForVersion(const void* data, int version, unsigned int type, int dim, int cols, int rows,
                                  int bands, int masks, const unsigned char* valid, double max_z_err,
                                  unsigned char* out, unsigned int out_size, unsigned int* written) {
  (void)data, (void)version, (void)type, (void)dim, (void)cols, (void)rows, (void)bands, (void)masks, (void)valid,
      (void)max_z_err, (void)out, (void)out_size, (void)written;
  return VIGIL_LERC_FAILED;
}
